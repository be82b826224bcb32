"""CGPO's instruction-following judge: IFEval's verifiable instructions, checked offline.

Metadata rows in IFEval's format (`instruction_id_list`, `kwargs`) work as they are: None-valued
kwargs (IFEval rows carry every instruction's keys) are ignored. All 25 ids of IFEval's registry
are checked with IFEval's semantics, kwarg names and tools (nltk's Punkt and word tokenizer,
langdetect), and give IFEval's strict verdict: tests/judges/instructions/test_ifeval_reference.py
compares them with Google's code as lm-eval ships it. Where IFEval has no verdict to agree with,
this judge fails (-1) instead:

- kwargs IFEval would replace with a random draw (a count below 1, a letter outside a-z, an nth
  paragraph beyond the paragraph count, a blank string) or crash on (an unknown relation or
  language, a keyword or marker that is not a valid regular expression) are a judge failure.
- langdetect is seeded, so a text near a language boundary gets one verdict every time, where
  IFEval's unseeded calls may differ between runs (see `language`).
"""

from rlguard.judges.instructions.judge import InstructionJudge
from rlguard.judges.instructions.registry import CHECKERS

__all__ = ["CHECKERS", "InstructionJudge"]
