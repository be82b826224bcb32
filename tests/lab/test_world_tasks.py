"""The world's tasks: right responses pass gold at the lengths the data uses, flawed ones fail,
and elaboration past the data's range is what breaks the length-limited tasks."""

import random

import pytest

from rlguard.lab.data import MAX_ELABORATION
from rlguard.lab.gold import GoldScorer
from rlguard.lab.tasks import TASKS


@pytest.mark.parametrize("task", list(TASKS))
def test_right_responses_pass_and_flawed_ones_fail(task):
    rng = random.Random(0)
    world = TASKS[task]
    rows = [world.prompt(rng) for _ in range(20)]
    right = [world.respond(r, rng, True, rng.randint(0, 2)) for r in rows]
    flawed = [world.respond(r, rng, False, rng.randint(0, 2)) for r in rows]
    assert world.gold(rows, right) == [1.0] * 20
    assert world.gold(rows, flawed) == [0.0] * 20


def test_too_much_elaboration_breaks_the_word_limit():
    rng = random.Random(1)
    world = TASKS["instructions"]
    rows = [world.prompt(rng) for _ in range(20)]
    longest = [world.respond(r, rng, True, MAX_ELABORATION) for r in rows]
    doubled = [f"{c} {c}" for c in longest]
    assert sum(world.gold(rows, doubled)) == 0.0


def test_truncated_code_and_math_fail():
    rng = random.Random(2)
    for name in ("code", "math"):
        world = TASKS[name]
        row = world.prompt(rng)
        full = world.respond(row, rng, True, 1)
        assert world.gold([row, row], [full, full[: len(full) - 6]]) == [1.0, 0.0]


def test_the_gold_scorer_routes_by_prompt_and_refuses_strangers():
    rng = random.Random(3)
    rows = [t.prompt(rng) for t in TASKS.values()]
    answers = [TASKS[r.task].respond(r, rng, True, 0) for r in rows]
    scorer = GoldScorer(rows)
    assert scorer([r.prompt for r in rows], answers) == [1.0] * len(rows)
    with pytest.raises(KeyError, match="does not know"):
        scorer(["What is the meaning of life?\n"], ["42"])
