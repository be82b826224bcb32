"""`from rlguard.judges import MathJudge, ...` works, and importing the package stays cheap."""

import pytest

import import_graph
import rlguard.judges
import rlguard.judges.llm
from rlguard.judges.base import Judge

PUBLIC_JUDGES = ("MathJudge", "CodeJudge", "InstructionJudge", "LLMJudge")
HEAVY = ("torch", "transformers", "math_verify", "nltk", "langdetect")


def imported_after(code: str) -> set[str]:
    """Top-level modules (of HEAVY) a fresh interpreter has imported after running `code`."""
    return import_graph.imported_after(code, HEAVY)


@pytest.mark.parametrize("name", PUBLIC_JUDGES)
def test_judges_are_public_names(name):
    judge = getattr(rlguard.judges, name)
    assert issubclass(judge, Judge)
    assert name in rlguard.judges.__all__


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"'rlguard\.judges' has no attribute 'NoSuchJudge'"):
        _ = rlguard.judges.NoSuchJudge
    with pytest.raises(AttributeError, match=r"'rlguard\.judges\.llm' has no attribute 'Nope'"):
        _ = rlguard.judges.llm.Nope


def test_importing_the_package_imports_no_heavy_dependency():
    assert imported_after("import rlguard.judges") == set()


def test_each_judge_imports_only_what_it_needs():
    assert imported_after("from rlguard.judges import MathJudge") == {"math_verify"}
    assert imported_after("from rlguard.judges import LLMJudge") == set()
    assert "torch" in imported_after("from rlguard.judges.llm import HFBackend")
