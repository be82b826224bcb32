"""`rlguard runtime bench` refuses bad options in one line before it starts anything."""

from __future__ import annotations

import pytest

from rlguard.cli.runtime_bench import bench
from rlguard.errors import InputError
from rlguard.runtime.bench import BenchSettings, response_budgets
from rlguard.runtime.executors import RuntimeConfig


def test_tau_outside_the_unit_interval_is_an_input_error():
    with pytest.raises(InputError, match=r"tau must be in \(0, 1\], got 1.5"):
        bench(tau=1.5)


def test_a_negative_price_file_is_an_input_error(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("serverless_gpu_s: -1\n")
    with pytest.raises(InputError, match="serverless_gpu_s"):
        bench(prices=prices)


def test_response_budgets_are_long_tailed_and_bounded():
    settings = BenchSettings(prompts=400, median_tokens=16, max_tokens=64)
    budgets = response_budgets(settings)
    assert min(budgets) >= 2 and max(budgets) <= 64
    assert sorted(budgets)[len(budgets) // 2] in range(12, 21)  # the median
    assert sum(b > 32 for b in budgets) > 20  # a tail well beyond twice the median
    assert budgets == response_budgets(settings)  # fixed per prompt, step after step


@pytest.mark.parametrize("field", ["max_batch", "actors", "gpus_per_actor"])
def test_a_runtime_config_needs_at_least_one_of_each(field):
    with pytest.raises(InputError, match=f"{field} must be >= 1, got 0"):
        RuntimeConfig("policy", **{field: 0})
