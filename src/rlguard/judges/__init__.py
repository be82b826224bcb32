"""Judges: constraints a response must satisfy (1), violates (0), or could not be judged on (-1).

`MixtureOfJudges` ANDs them, as CGPO does; `rlguard.judges.registry` builds them by name.
"""

from rlguard.judges.base import FAILED, SATISFIED, VIOLATED, Judge, Verdict
from rlguard.judges.mixture import MixtureOfJudges

__all__ = ["FAILED", "SATISFIED", "VIOLATED", "Judge", "MixtureOfJudges", "Verdict"]
