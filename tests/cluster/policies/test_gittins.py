"""Gittins index over attained GPU-service, from an empirical job-size distribution."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.gittins import Gittins
from rlguard.cluster.scheduler import Scheduler
from rlguard.errors import InputError

HISTORY = [400.0, 100.0, 1000.0, 200.0]  # unsorted on purpose
QUANTUM = 250.0


def hand_index(a: float) -> float:
    """G(a) = P(S - a <= D | S > a) / E[min(S - a, D) | S > a], literally."""
    above = [s for s in HISTORY if s > a]
    p = sum(s - a <= QUANTUM for s in above) / len(above)
    e = sum(min(s - a, QUANTUM) for s in above) / len(above)
    return p / e


def test_defaults_and_name() -> None:
    policy = Gittins([1.0, 2.0])
    assert policy.name == "gittins"
    assert policy.preemptive is True
    assert policy.tick_s == 300.0
    assert policy.quantum == 3250.0


@pytest.mark.parametrize(
    ("a", "expected"),
    [
        (0.0, 2 / 800),  # P = 2/4, E = (100 + 200 + 250 + 250) / 4 = 200
        (150.0, 2 / 550),  # P = 2/3, E = (50 + 250 + 250) / 3
        (500.0, 0.0),  # nothing finishes within the quantum
        (800.0, 1 / 200),  # only S = 1000 left, 200 to go: certain within the quantum
        (999.0, 1.0),
    ],
)
def test_index_matches_hand_computation(a, expected) -> None:
    policy = Gittins(HISTORY, quantum=QUANTUM)
    assert policy.index(np.array([a]))[0] == pytest.approx(expected)
    assert policy.index(np.array([a]))[0] == pytest.approx(hand_index(a))


def test_index_is_nan_beyond_history() -> None:
    assert np.isnan(Gittins(HISTORY, quantum=QUANTUM).index(np.array([1000.0, 5e9]))).all()


def test_order_is_decreasing_index_then_beyond_history_least_attained(make_view, order) -> None:
    # attained (1 GPU): 0, 150, 500, 800, 2000 (beyond), 1000 (beyond, exactly the largest)
    view = make_view(
        gpus=1,
        executed_s=[0.0, 150.0, 500.0, 800.0, 2000.0, 1000.0],
        submit_s=0.0,
        running=[False, True, False, True, False, False],
        now=3000.0,
    )
    policy = Gittins(HISTORY, quantum=QUANTUM)
    keys = policy.priority(view)
    assert np.all(np.isfinite(keys))
    assert keys[4] > keys[5] > 0.0  # beyond history: after all, least attained first
    assert order(policy, view) == [3, 1, 0, 2, 5, 4]


def test_attained_is_gpus_times_time(make_view, order) -> None:
    # 250 s on 1 GPU: G(250) = P(S <= 500 | S > 250) / E = (1/2) / ((150 + 250) / 2) = 1/400,
    # as high as a fresh job's 2/800; 250 s on 2 GPUs is 500 GPU-s: G(500) = 0, it goes last.
    view = make_view(gpus=[1, 2, 1], executed_s=[250.0, 250.0, 0.0], submit_s=[0.0, 1.0, 2.0])
    policy = Gittins(HISTORY, quantum=QUANTUM)
    np.testing.assert_allclose(policy.priority(view), [-1 / 400, 0.0, -1 / 400])
    assert order(policy, view) == [0, 2, 1]


def test_single_sample_and_zero_sizes_stay_finite(make_view) -> None:
    view = make_view(gpus=1, executed_s=[0.0, 0.5, 1.0, 10.0])
    for history in ([1.0], [0.0], [0.0, 0.0, 1.0]):
        keys = Gittins(history, quantum=QUANTUM).priority(view)
        assert np.all(np.isfinite(keys)), history


@pytest.mark.parametrize(
    ("history", "kwargs"),
    [
        ([], {}),
        ([1.0, float("nan")], {}),
        ([-1.0, 2.0], {}),
        ([1.0, np.inf], {}),
        ([1.0], {"quantum": 0.0}),
        ([1.0], {"tick_s": -1.0}),
    ],
)
def test_invalid_arguments(history, kwargs) -> None:
    with pytest.raises(ValueError):
        Gittins(history, **kwargs)


def test_from_csv(tmp_path) -> None:
    path = tmp_path / "sizes.csv"
    path.write_text("duration\n400\n100\n\n1000\n200\n")
    policy = Gittins.from_csv(path, quantum=QUANTUM)
    assert policy.sizes.tolist() == [100.0, 200.0, 400.0, 1000.0]
    assert policy.index(np.array([0.0]))[0] == pytest.approx(2 / 800)


@pytest.mark.parametrize(
    "text",
    [
        "size\n1\n",
        "duration,gpus\n1,2\n",
        "duration\n",
        "",
        "duration\nabc\n",
        "duration\n-5\n",
        "duration\n1,2\n",
    ],
)
def test_from_csv_rejects_bad_files(tmp_path, text) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=r"bad\.csv"):
        Gittins.from_csv(path)


def test_from_csv_missing_file(tmp_path) -> None:
    with pytest.raises(InputError, match=r"nope\.csv"):
        Gittins.from_csv(tmp_path / "nope.csv")


def test_default_loads_the_packaged_yarn_samples(make_view) -> None:
    policy = Gittins.default()
    assert policy.sizes.size == 1001
    assert policy.sizes[0] == 121.0 and policy.sizes[-1] == 53_294_624.0
    attained = np.concatenate([np.geomspace(1.0, 1e8, 200), [0.0, 121.0, 53_294_624.0]])
    view = make_view(gpus=1, executed_s=attained, now=1e9)
    assert np.all(np.isfinite(policy.priority(view)))


def two_jobs(make_job, make_workload, b_submit: float):
    # History [800, 8000] GPU-s, D = 1000. A: 8 GPUs x 1000 s = 8000 GPU-s. B: 8 GPUs x 50 s.
    # A fresh job has G(0) = 1 / (800 + 1000). A past 800 GPU-s has G = 0 until a + D >= 8000,
    # then G = 1 / (8000 - a): Gittins keeps a job that history says is about to finish.
    workload = make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=1000.0),
        make_job("B", gpus=8, submit_s=b_submit, duration_s=50.0),
    )
    policy = Gittins([800.0, 8000.0], quantum=1000.0)
    return Engine(workload, Scheduler(policy), gpus=8, restore_s=0.0).run()


def test_engine_job_near_its_predicted_end_is_not_preempted(make_job, make_workload) -> None:
    result = two_jobs(make_job, make_workload, b_submit=920.0)  # A at 7360: G = 1/640 > 1/1800
    np.testing.assert_allclose(result.finish_s, [1000.0, 1050.0])
    assert result.preemptions.tolist() == [0, 0]


def test_engine_job_in_the_gap_is_preempted(make_job, make_workload) -> None:
    # A at 1600: G = 0 < 1/1800. Preemption waits for the next scheduling round (tick at 300 s).
    result = two_jobs(make_job, make_workload, b_submit=200.0)
    np.testing.assert_allclose(result.finish_s, [1050.0, 350.0])
    assert result.preemptions.tolist() == [1, 0]
