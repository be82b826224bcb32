"""IFEval's language family, and the language detector that change_case's English checks share.

IFEval asks `langdetect` (a port of Google's language-detection, with its profiles shipped in the
package). langdetect samples n-grams at random, so IFEval's verdict on a text near a decision
boundary can change from run to run; here a detector of our own is seeded with 0 (langdetect's
documented way to make it deterministic), without touching langdetect's global factory. When
langdetect finds no features to judge by, IFEval counts the instruction as followed, and so do we.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from rlguard.judges.instructions.args import BadKwargs

if TYPE_CHECKING:
    from langdetect.detector_factory import DetectorFactory

SEED = 0

# The ISO 639-1 codes IFEval's response_language instruction may ask for.
LANGUAGES = frozenset(
    {"en", "es", "pt", "ar", "hi", "fr", "ru", "de", "ja", "it", "bn", "uk", "th", "ur", "ta"}
    | {"te", "bg", "ko", "pl", "he", "fa", "vi", "ne", "sw", "kn", "mr", "gu", "pa", "ml", "fi"}
)


@functools.cache
def _factory() -> DetectorFactory:
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.set_seed(SEED)
    return factory


@functools.lru_cache(maxsize=4096)
def detect(text: str) -> str | None:
    """langdetect's language code for `text`, or None when it finds nothing to judge by. Seeded,
    so a function of the text alone, and kept: it costs about 10 ms, and policies repeat
    themselves (change_case's checks and response_language ask for the same responses too)."""
    from langdetect.lang_detect_exception import LangDetectException

    detector = _factory().create()
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:
        return None


def response_language(response: str, *, language: Any) -> str | None:
    """The whole response is in `language` (an ISO 639-1 code), by langdetect."""
    if language not in LANGUAGES:
        raise BadKwargs(
            f"language must be one of IFEval's codes {sorted(LANGUAGES)}, got {language!r}"
        )
    found = detect(response)
    if found is None or found == language:
        return None
    return f"detected language {found!r}, needs {language!r}"


def not_english(response: str) -> str | None:
    """Why langdetect does not take `response` for English, or None if it does (or cannot tell)."""
    found = detect(response)
    return None if found in (None, "en") else f"detected language {found!r}, not English"
