"""Scoring finished groups on free workers while the generation tail decodes (`overlap`): every
group scored once, training after the last score, never a slower step, and the scoring billed."""

from __future__ import annotations

import dataclasses
from itertools import pairwise

import pytest
from sim_helpers import SMALL as SETUP
from sim_helpers import SMALL_PROFILE as PROFILE
from sim_helpers import batch

from rlguard.runtime.policies.components import Components
from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.lengths import LengthPredictor
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.sim.decode import simulate_generation
from rlguard.runtime.sim.phases import group_scoring_gpu_s
from rlguard.runtime.sim.serverless import ServerlessSim
from rlguard.runtime.sim.tail import Tail, finish_time
from rlguard.runtime.sim.workload import PromptPool


def test_finish_time_splits_the_rest_evenly_after_what_late_workers_still_do() -> None:
    assert finish_time([1.0, 1.0], 1, 4.0) == pytest.approx(3.0)
    # the early worker's 2 spare seconds take 2 of the 6 GPU-s; the rest is split over both
    assert finish_time([1.0, 3.0], 1, 6.0) == pytest.approx(5.0)
    # little work: it is done before the late worker finishes what it was doing
    assert finish_time([1.0, 3.0], 2, 1.0) == pytest.approx(3.0)


@pytest.mark.parametrize(("tau", "keep_alive"), [(0.75, 60.0), (None, 60.0), (0.75, 0.0)])
def test_every_group_is_scored_once_and_training_waits_for_the_last_score(
    tau: float | None, keep_alive: float
) -> None:
    work = PromptPool(SETUP.workload, 3).batch(0, 0, SETUP.prompts_per_step, SETUP.k)
    assignment = [list(range(g, 32, 4)) for g in range(4)]
    gen = simulate_generation(assignment, work, PROFILE, dedup=True, tau=tau)
    group_gpu_s = group_scoring_gpu_s(work, PROFILE, SETUP)
    tail = Tail(
        Meter(Prices(keep_alive_s=keep_alive)),
        gen,
        group_gpu_s,
        PROFILE,
        Prices(keep_alive_s=keep_alive),
        expected=0.5 * gen.end_s,  # a wrong prediction too: pre-warmed workers join the tail
        overlap=True,
        workers=4,
    ).run()
    assert tail.tail_scored, "some groups finish before the tail ends"
    assert sorted([*tail.tail_scored, *tail.rest]) == list(range(32))
    finished = gen.seq_end_s.reshape(32, -1).max(axis=1)
    by_worker: dict[int, list[tuple[float, float]]] = {}
    for g, (w, start, end) in tail.tail_scored.items():
        assert finished[g] <= start < gen.end_s  # a finished group, started in the tail
        assert start >= gen.actor_end_s[w]  # on a worker no longer generating
        assert end - start == pytest.approx(group_gpu_s[g] / PROFILE.gpus_per_actor)
        by_worker.setdefault(w, []).append((start, end))
    for spans in by_worker.values():  # one group at a time per worker
        spans.sort()
        assert all(a[1] <= b[0] + 1e-12 for a, b in pairwise(spans))
    last_score = max(end for _, _, end in tail.tail_scored.values())
    rest_s = group_gpu_s[tail.rest].sum() / SETUP.n_gpus
    assert tail.scoring_end_s >= max(last_score, tail.scoring_start_s + rest_s) - 1e-12
    assert tail.scoring_start_s >= gen.end_s


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("parts", [Components(), Components(migrate=False, assign=False)])
def test_overlap_never_makes_a_step_slower(seed: int, parts: Components) -> None:
    # holds when a worker's release cannot come later than without overlap (cold start <=
    # keep-alive) and no group takes longer to score than one worker's share of all scoring
    pool = PromptPool(SETUP.workload, seed)
    with_overlap = ServerlessSim(SETUP, PROFILE, Prices(), parts)
    without = ServerlessSim(SETUP, PROFILE, Prices(), dataclasses.replace(parts, overlap=False))
    predictor = LengthPredictor()
    hidden = 0.0
    for step in range(3):
        work = pool.batch(0, step, SETUP.prompts_per_step, SETUP.k)
        fast, slow = with_overlap.step(work, predictor), without.step(work, predictor)
        assert fast.phases["generation"] == slow.phases["generation"]
        assert fast.step_s <= slow.step_s + 1e-9
        on_path = ("generation", "startup_wait", "scoring", "training")
        assert fast.step_s == pytest.approx(sum(fast.phases[p] for p in on_path))
        hidden += fast.phases["scoring_overlapped"]
        for key, row in zip(work.keys, work.lengths, strict=True):
            predictor.update(key, row)
    assert hidden > 0


def test_billed_gpu_seconds_include_the_overlapped_scoring() -> None:
    # worker 0 holds a long group and a short one, worker 1 three short ones; with no keep-alive,
    # worker 1 scores the three short groups finished elsewhere and its own, then is released and
    # pre-warmed for the expected end of generation (the last step's)
    setup = SETUP.model_copy(update={"n_gpus": 2, "prompts_per_step": 4, "k": 2})
    work = batch([[400, 400], [5, 5], [5, 5], [5, 5]])
    lone = dataclasses.replace(PROFILE, max_batch=4, cold_start_s=1.0, prefill_s_per_token=0.0)
    parts = Components(scaling=False, assign=False, migrate=False)
    sim = ServerlessSim(setup, lone, Prices(keep_alive_s=0.0), parts)
    sim.step(work, LengthPredictor())  # history: this step's generation time
    report = sim.step(work, LengthPredictor())

    group_s = group_scoring_gpu_s(work, lone, setup)
    generation = report.phases["generation"]
    assert generation == pytest.approx(5 * lone.decode_step_s(4) + 395 * lone.decode_step_s(2))
    short_done = 5 * lone.decode_step_s(4)
    released = short_done + group_s[1:].sum()  # worker 1, after scoring groups 1-3
    assert report.phases["scoring_overlapped"] == pytest.approx(group_s[1:].sum() / 2)
    assert report.phases["scoring"] == pytest.approx(group_s[0] / 2)
    assert report.cold_starts == 1 and report.phases["startup_wait"] == 0.0
    step = report.step_s
    billed = step + released + (step - (generation - lone.cold_start_s))
    assert report.gpu_s == pytest.approx(billed)
