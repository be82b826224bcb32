"""`rlguard runtime bench` refuses bad options in one line, exit 2, before it starts anything."""

from __future__ import annotations

import pytest

from cli_runner import cli
from rlguard.errors import InputError
from rlguard.runtime.executors import RuntimeConfig
from rlguard.runtime.executors.bench import BenchSettings, response_budgets


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--tau", "0"], "--tau"),
        (["--tau", "1.5"], "--tau"),
        (["--actors", "0"], "--actors"),  # no function, so no GPU, to run on
        (["--lam", "-0.1"], "--lam"),
        (["--prompts", "0"], "--prompts"),
        (["--keep-alive", "-1"], "--keep-alive"),
    ],
)
def test_bad_options_are_one_line_exit_2(monkeypatch, capsys, args, needle):
    code, out, err = cli(monkeypatch, capsys, "runtime", "bench", "--json", *args)
    assert code == 2 and out == ""
    assert err.startswith("error:") and needle in err and err.count("\n") == 1


def test_a_negative_price_is_one_line_exit_2(monkeypatch, capsys, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("vm_gpu_s: -1\n")
    code, out, err = cli(monkeypatch, capsys, "runtime", "bench", "--prices", str(prices))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert str(prices) in err and "vm_gpu_s" in err


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
