"""CGPO's instruction-following judge: IFEval's verifiable instructions, checked offline.

Metadata rows in IFEval's format (`instruction_id_list`, `kwargs`) work as they are: None-valued
kwargs (IFEval rows carry every instruction's keys) are ignored. Checkers follow IFEval's
instructions.py semantics and kwarg names, with these deviations:

- Sentence counts use a regex splitter instead of nltk's Punkt model, and all-capital words a regex
  tokenizer instead of `nltk.word_tokenize`; see `text` for where counts may differ. Word counts
  (`\\w+` runs) are exactly IFEval's.
- change_case:english_capital / english_lowercase check case only; IFEval also runs langdetect.
- language:response_language is not supported (no offline language detector): a -1 verdict.
- Keywords, forbidden words, section splitters and postscript markers are matched as literal text;
  IFEval compiles them as regexes, which differs only when they hold regex metacharacters.
- length_constraints:nth_paragraph_first_word picks the nth non-empty paragraph; IFEval indexes
  the raw "\\n\\n" split, so runs of four or more newlines shift its paragraph numbering.
- Malformed kwargs (a relation other than "less than"/"at least", a non-integer count, a letter
  that is not one character) are a judge failure; IFEval would draw random values instead.
"""

from rlguard.judges.instructions.judge import InstructionJudge
from rlguard.judges.instructions.registry import CHECKERS, UNSUPPORTED

__all__ = ["CHECKERS", "UNSUPPORTED", "InstructionJudge"]
