"""Cost-aware actor scaling: the estimate by hand, and the choice at the ends of lambda."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_profile import PROFILE

from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.policies.scaling import choose_actor_count, estimate_actor_times, group_work


def test_estimate_by_hand() -> None:
    # one actor, groups of 2 samples, lengths 100 and 50: 4 sequences fit the 4 slots,
    # steps = longest = 100, tokens = 2 * 150 = 300 -> 0.02 * 100 + 0.001 * 300
    assert estimate_actor_times([100, 50], 2, PROFILE, 1).tolist() == pytest.approx([2.3])
    # 3 groups x 2 = 6 sequences on 4 slots: steps = max(100, 2 * 180 / 4 = 90) = 100
    assert estimate_actor_times([100, 40, 40], 2, PROFILE, 1)[0] == pytest.approx(2.36)
    # queueing dominates: steps = 2 * 400 / 4 = 200 > 100
    assert estimate_actor_times([100] * 4, 2, PROFILE, 1)[0] == pytest.approx(4.0 + 0.8)
    # two actors: the split gives [100] and [40, 40]
    times = estimate_actor_times([100, 40, 40], 2, PROFILE, 2)
    assert times.tolist() == pytest.approx([2.0 + 0.2, 0.8 + 0.16])


def test_estimate_charges_kv_reads_compute_floor_and_kv_limited_concurrency() -> None:
    kv = TimeProfile(**{**vars(PROFILE), "decode_s_per_seq": 0.0, "max_batch": 100})
    kv = TimeProfile(**{**vars(kv), "decode_s_per_context_token": 1e-5})
    # one group of 2 samples of 100 tokens after a 10-token prompt: 100 steps, and contexts that
    # add up to 2 x (100 x 10 + 100^2 / 2) tokens read
    assert estimate_actor_times([100], 2, kv, 1, prompt_tokens=10)[0] == pytest.approx(
        0.02 * 100 + 1e-5 * 2 * (1000 + 5000)
    )
    floor = TimeProfile(**{**vars(kv), "decode_compute_s_per_seq": 0.05})
    assert estimate_actor_times([100], 2, floor, 1)[0] == pytest.approx(0.05 * 200)
    # a KV cache of 120 tokens holds 2 sequences of mean context 10 + 100^2 / 200 = 60 at once:
    # 8 sequences of 100 tokens take 400 steps, not 100
    small = TimeProfile(
        **{**vars(kv), "decode_s_per_context_token": 0.0, "kv_capacity_tokens": 120}
    )
    assert estimate_actor_times([100] * 4, 2, small, 1, prompt_tokens=10)[0] == pytest.approx(8.0)


def test_group_work_grows_faster_than_length_through_the_kv_reads() -> None:
    kv = TimeProfile(**{**vars(PROFILE), "decode_s_per_context_token": 1e-5})
    work = group_work([100, 200], 2, kv, prompt_tokens=0)
    assert work[1] > 2 * work[0]
    assert group_work([100, 200], 2, PROFILE).tolist() == pytest.approx(
        [2 * 100 * (0.02 / 4 + 0.001), 2 * 200 * (0.02 / 4 + 0.001)]
    )


def test_idle_warm_actors_that_rejoin_cost_a_cold_start_or_the_phase() -> None:
    predicted = [100.0] * 8
    plain = choose_actor_count(predicted, 1, PROFILE, Prices(), 0.0, [2], warm=4)
    rejoin = choose_actor_count(predicted, 1, PROFILE, Prices(), 0.0, [2], warm=4, idle_rejoin=True)
    latency = estimate_actor_times(predicted, 1, PROFILE, 2).max()
    assert rejoin.gpu_s - plain.gpu_s == pytest.approx(2 * min(latency, 10.0) * 2)


def test_lambda_one_is_fastest_and_lambda_zero_cheapest() -> None:
    predicted = [400, 300, 200, 100, 100, 50, 50, 50]
    prices = Prices()
    fast = choose_actor_count(predicted, 2, PROFILE, prices, 1.0, [1, 2, 4, 8])
    cheap = choose_actor_count(predicted, 2, PROFILE, prices, 0.0, [1, 2, 4, 8])
    lat = {n: estimate_actor_times(predicted, 2, PROFILE, n).max() for n in (1, 2, 4, 8)}
    assert fast.latency_s == pytest.approx(min(lat.values()))
    assert cheap.gpu_s <= fast.gpu_s
    assert fast.n_actors > cheap.n_actors
    # GPU-time counts each new actor's cold start and the GPUs it holds
    times = estimate_actor_times(predicted, 2, PROFILE, cheap.n_actors)
    assert cheap.gpu_s == pytest.approx((times.sum() + 10.0 * cheap.n_actors) * 2)


def test_warm_actors_and_unbilled_cold_starts_cost_no_cold_start() -> None:
    predicted = [100.0] * 8
    cold = choose_actor_count(predicted, 1, PROFILE, Prices(), 0.5, [4])
    warm = choose_actor_count(predicted, 1, PROFILE, Prices(), 0.5, [4], warm=4)
    unbilled = choose_actor_count(predicted, 1, PROFILE, Prices(bill_cold_start=False), 0.5, [4])
    assert cold.gpu_s - warm.gpu_s == pytest.approx(4 * 10.0 * 2)
    assert unbilled.gpu_s == pytest.approx(warm.gpu_s)


@pytest.mark.parametrize(
    "kwargs", [{"lam": 1.5}, {"lam": -0.1}, {"candidates": []}, {"candidates": [0, 2]}, {"k": 0}]
)
def test_bad_arguments(kwargs) -> None:
    args = {
        "predicted": [1.0],
        "k": 1,
        "profile": PROFILE,
        "prices": Prices(),
        "lam": 0.5,
        "candidates": [1],
    } | kwargs
    with pytest.raises(ValueError):
        choose_actor_count(**args)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(1, 2048), min_size=1, max_size=30),
    st.floats(0, 1),
    st.lists(st.integers(1, 12), min_size=1, max_size=6, unique=True),
)
def test_decision_is_a_candidate_with_a_normalised_score(predicted, lam, candidates) -> None:
    d = choose_actor_count(predicted, 3, PROFILE, Prices(), lam, candidates)
    assert d.n_actors in candidates
    assert d.score >= 1.0 - 1e-9  # both terms are >= 1 after normalisation
