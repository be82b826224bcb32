"""Tenant quotas and weighted fair shares over a policy's order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlguard.platform.fairshare import admit, fair_shares


def test_shares_are_weighted_and_never_above_demand():
    assert fair_shares({"a": 8, "b": 8}, {"a": 1, "b": 1}, 8) == {"a": 4.0, "b": 4.0}
    assert fair_shares({"a": 8, "b": 8}, {"a": 3, "b": 1}, 8) == {"a": 6.0, "b": 2.0}
    assert fair_shares({"a": 8, "b": 1}, {"a": 1, "b": 1}, 8) == {"a": 7.0, "b": 1.0}


def test_a_tenant_first_in_line_does_not_take_the_whole_cluster():
    # a's four jobs come first in the policy's order; b's two would wait under plain greedy.
    gpus = np.array([2, 2, 2, 2, 2, 2])
    owners = ["a", "a", "a", "a", "b", "b"]
    none = np.zeros(6, dtype=bool)
    got = admit(gpus, owners, none, {"a": 8, "b": 8}, {"a": 1, "b": 1}, 8)
    assert got.tolist() == [True, True, False, False, True, True]


def test_unused_share_goes_to_others_but_never_past_a_quota():
    gpus = np.array([1, 1, 1, 1, 1, 1])
    owners = ["a", "a", "a", "a", "a", "b"]
    none = np.zeros(6, dtype=bool)
    got = admit(gpus, owners, none, {"a": 3, "b": 8}, {"a": 1, "b": 1}, 8)
    assert got.tolist() == [True, True, True, False, False, True]  # a capped at 3, 4 GPUs idle


def test_running_jobs_of_a_non_preemptive_pass_keep_their_gpus():
    gpus = np.array([4, 2, 2])
    owners = ["a", "b", "b"]
    fixed = np.array([True, False, False])
    got = admit(gpus, owners, fixed, {"a": 8, "b": 8}, {"a": 1, "b": 1}, 6)
    assert got.tolist() == [True, True, False]


@given(
    st.lists(st.tuples(st.integers(1, 8), st.sampled_from("abc")), min_size=1, max_size=30),
    st.integers(1, 64),
    st.dictionaries(st.sampled_from("abc"), st.integers(0, 16), min_size=3),
)
def test_admission_respects_capacity_and_quotas(jobs, capacity, quota):
    gpus = np.array([g for g, _ in jobs])
    owners = [t for _, t in jobs]
    got = admit(gpus, owners, np.zeros(len(jobs), bool), quota, dict.fromkeys("abc", 1.0), capacity)
    assert gpus[got].sum() <= capacity
    for tenant in "abc":
        assert (
            sum(g for g, t, a in zip(gpus, owners, got, strict=True) if a and t == tenant)
            <= quota[tenant]
        )


@pytest.mark.parametrize("capacity", [1, 5, 16])
def test_work_conserving_when_only_one_tenant_has_work(capacity):
    gpus = np.ones(20, dtype=int)
    got = admit(
        gpus, ["a"] * 20, np.zeros(20, bool), {"a": 100, "b": 100}, {"a": 1, "b": 9}, capacity
    )
    assert got.sum() == capacity


def test_without_backfill_the_first_job_the_cluster_cannot_hold_blocks_the_rest():
    gpus = np.array([4, 8, 2, 1])
    none = np.zeros(4, dtype=bool)
    got = admit(gpus, ["a"] * 4, none, {"a": 16}, {"a": 1}, 8, backfill=False)
    assert got.tolist() == [True, False, False, False]


def test_without_backfill_a_job_held_back_by_its_tenants_quota_blocks_no_one():
    # a's second job exceeds a's quota (4): skipped, b's job behind it still starts.
    gpus = np.array([4, 2, 2])
    none = np.zeros(3, dtype=bool)
    got = admit(gpus, ["a", "a", "b"], none, {"a": 4, "b": 8}, {"a": 1, "b": 1}, 8, backfill=False)
    assert got.tolist() == [True, False, True]
