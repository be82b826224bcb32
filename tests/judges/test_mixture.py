from hypothesis import given
from hypothesis import strategies as st

from rlguard.judges.base import FAILED, SATISFIED, VIOLATED, Judge, Verdict
from rlguard.judges.mixture import MixtureOfJudges, combine


class Scripted(Judge):
    """Returns the verdicts it was given, in order (one per sample)."""

    def __init__(self, name: str, values: list[int]) -> None:
        self.name = name
        self.values = values

    def evaluate(self, prompts, completions, metadata):
        return [Verdict(v, f"{self.name}={v}") for v in self.values]


class Crashing(Judge):
    name = "crashing"

    def check(self, prompt, completion, metadata):
        raise RuntimeError("boom")


def test_and_of_two_judges_by_hand():
    a = Scripted("a", [1, 1, 0, 0, 1, -1])
    b = Scripted("b", [1, 0, 1, 0, -1, 0])
    mixture = MixtureOfJudges([a, b])
    result = mixture.evaluate(["p"] * 6, ["c"] * 6, [{}] * 6)
    assert result.combined == [1, 0, 0, 0, -1, -1]
    assert result.per_judge["a"][2] == Verdict(0, "a=0")


def test_pass_rates_count_failures_as_not_passing():
    mixture = MixtureOfJudges([Scripted("a", [1, 1, 0, -1]), Scripted("b", [1, 1, 1, 1])])
    mixture.judge(["p"] * 4, ["c"] * 4, [{}] * 4)
    assert mixture.pass_rates() == {"a": 0.5, "b": 1.0}
    assert mixture.failure_rates() == {"a": 0.25, "b": 0.0}
    mixture.reset()
    assert mixture.pass_rates() == {}


def test_a_crashing_checker_is_a_judge_failure_not_an_exception():
    verdicts = Crashing().evaluate(["p"], ["c"], [{}])
    assert verdicts == [Verdict(FAILED, "RuntimeError: boom")]


def test_no_judges_pass_everything():
    assert MixtureOfJudges([]).judge(["p", "q"], ["c", "d"], [{}, {}]) == [1, 1]


def test_repeated_judge_names_are_rejected():
    import pytest

    with pytest.raises(ValueError, match="repeat"):
        MixtureOfJudges([Scripted("a", []), Scripted("a", [])])


@given(st.lists(st.sampled_from([SATISFIED, VIOLATED, FAILED]), min_size=1, max_size=6))
def test_combine_is_and_with_failure_first(values):
    expected = FAILED if FAILED in values else int(all(v == SATISFIED for v in values))
    assert combine(values) == expected
