"""The Meter's billing rules and the comparison every runtime command prints."""

from __future__ import annotations

import pytest

from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.report import StepReport, comparison, gains, summarize


def test_serverless_bills_cold_start_to_release_plus_keep_alive_rounded_up() -> None:
    meter = Meter(Prices(serverless_gpu_s=0.001))
    ready = meter.start("f", 10.0, gpus=2, cold_start_s=30.0)
    assert ready == 40.0
    meter.busy("f", 40.0, 70.2)
    meter.release("f", 70.2, keep_alive_s=5.0)
    # 10 -> 75.2 = 65.2 s, rounded up to 66 s, on 2 GPUs
    assert meter.serverless() == pytest.approx((132.0, 0.132))
    assert meter.cold_starts == 1


def test_unbilled_cold_start_and_exact_carried_lives() -> None:
    meter = Meter(Prices(bill_cold_start=False, billing_granularity_s=0.0))
    meter.start("f", 0.0, gpus=1, cold_start_s=30.0)
    meter.release("f", 45.5)
    assert meter.serverless()[0] == pytest.approx(15.5)
    meter = Meter(Prices())
    meter.start("w", 0.0, gpus=1, carried_in=True)  # held from the previous step: no rounding
    meter.release("w", 12.25)
    meter.start("p", 20.0, gpus=1, cold_start_s=3.0)
    meter.close(30.5)  # still running when metering stops: no rounding either
    assert meter.serverless()[0] == pytest.approx(12.25 + 10.5)
    assert meter.cold_starts == 1


def test_serverful_bills_the_whole_pool_for_the_whole_time() -> None:
    gpu_s, usd = Meter(Prices(vm_gpu_s=0.002)).serverful(16, 100.0)
    assert (gpu_s, usd) == pytest.approx((1600.0, 3.2))


def test_meter_refuses_inconsistent_records() -> None:
    meter = Meter(Prices())
    meter.start("f", 0.0, gpus=1, cold_start_s=5.0)
    with pytest.raises(ValueError):
        meter.start("f", 1.0, gpus=1)
    with pytest.raises(ValueError):
        meter.busy("f", 2.0, 4.0)  # before it is ready
    meter.busy("f", 5.0, 9.0)
    with pytest.raises(ValueError):
        meter.release("f", 8.0)  # before its work ended
    with pytest.raises(ValueError):
        meter.serverless()  # still running
    meter.release("f", 9.0)
    with pytest.raises(ValueError):
        meter.release("f", 10.0)


def report(step: float, gpu: float, usd: float) -> StepReport:
    return StepReport(step, gpu, usd, {"generation": step / 2}, 1, [1.0, 2.0], [0.5], 10, 20)


def test_summary_gains_and_schema() -> None:
    base = summarize([report(100, 1000, 2.0), report(200, 2000, 4.0)])
    assert base["step_s"] == 150 and base["actor_busy_s"] == 3.0
    assert base["phases"] == {"generation": 75.0}
    fast = summarize([report(100, 600, 0.6)])
    assert gains(base, fast) == pytest.approx(
        {"speedup": 1.5, "cost_cut": 0.6, "cost_cut_usd": 0.8}
    )
    payload = comparison({"setup": "x"}, base, fast, {"no-dedup": base})
    assert {"config", "baseline", "serverless", "speedup", "cost_cut", "ablation"} <= set(payload)
    assert payload["ablation"]["no-dedup"]["speedup"] == pytest.approx(1.0)
    assert {"step_s", "gpu_s", "cost_usd"} <= set(report(1, 1, 1).to_json())
    with pytest.raises(ValueError):
        summarize([])
