"""The instruction judge gives IFEval's verdicts: Google's reference code (as lm-eval ships it)
and the judge check the same generated responses and kwargs, for every instruction id.

The reference runs offline (see tests/ifeval_reference.py); if it cannot be imported these tests
fail, they never skip.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ifeval_reference as reference
from ifeval_cases import cases, grid, kwargs_grid, responses
from rlguard.judges.instructions import CHECKERS, InstructionJudge
from rlguard.judges.instructions.registry import check_instruction

IDS = sorted(reference.REFERENCE_IDS)


def disagreements(instruction_id, pairs):
    """The (kwargs, response, reference verdict) where the judge's verdict differs."""
    found = []
    for kwargs, response in pairs:
        expected = reference.follows(instruction_id, kwargs, response)
        if (check_instruction(instruction_id, response, kwargs) is None) != expected:
            found.append((kwargs, response, expected))
    return found


def test_the_judge_checks_every_reference_id():
    assert set(CHECKERS) == reference.REFERENCE_IDS
    assert len(IDS) == 25


@pytest.mark.parametrize("instruction_id", IDS)
def test_grid_verdicts_equal_the_reference(instruction_id):
    pairs = grid(instruction_id)
    verdicts = {reference.follows(instruction_id, k, r) for k, r in pairs}
    assert verdicts == {True, False}  # the grid reaches both sides of every instruction
    assert disagreements(instruction_id, pairs) == []


GENERATED = settings(
    max_examples=150,
    derandomize=True,  # the same examples on every run: CI verdicts do not depend on luck
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize("instruction_id", IDS)
@GENERATED
@given(data=st.data())
def test_generated_verdicts_equal_the_reference(instruction_id, data):
    kwargs, response = data.draw(cases(instruction_id))
    assert disagreements(instruction_id, [(kwargs, response)]) == []


@GENERATED
@given(data=st.data())
def test_a_rows_verdict_is_ifevals_strict_verdict(data):
    ids = data.draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=4, unique=True))
    response = data.draw(responses())
    kwargs = [data.draw(st.sampled_from(list(kwargs_grid(i, response)))) for i in ids]
    metadata = {"instruction_id_list": ids, "kwargs": kwargs}
    [verdict] = InstructionJudge().judge(["prompt"], [response], [metadata])
    assert verdict == int(all(reference.follows_all(ids, kwargs, response)))
