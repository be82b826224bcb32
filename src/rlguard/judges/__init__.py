"""Judges: constraints a response must satisfy (1), violates (0), or could not be judged on (-1).

`MixtureOfJudges` ANDs them, as CGPO does; `rlguard.judges.registry` builds them by name. The
judges themselves load on first use, so importing this package pulls in neither math-verify, nltk
nor torch.
"""

from rlguard._lazy import lazy_exports
from rlguard.judges.base import FAILED, SATISFIED, VIOLATED, Judge, Verdict
from rlguard.judges.mixture import MixtureOfJudges

_EXPORTS = {
    "CodeJudge": "rlguard.judges.code",
    "InstructionJudge": "rlguard.judges.instructions",
    "LLMJudge": "rlguard.judges.llm",
    "MathJudge": "rlguard.judges.math",
}

__all__ = ["FAILED", "SATISFIED", "VIOLATED", "Judge", "MixtureOfJudges", "Verdict", *_EXPORTS]

__getattr__ = lazy_exports(__name__, _EXPORTS)
