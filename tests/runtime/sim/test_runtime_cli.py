"""`rlguard runtime simulate`: the JSON contract, the table, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli_runner import cli, one_line_exit_2
from rlguard.runtime.policies.profiles import load_profile

KEYS = {"config", "baseline", "serverless", "speedup", "cost_cut", "ablation"}
ABLATIONS = {"no-dedup", "no-assign", "no-scaling", "no-migrate", "no-overlap"}


def simulate(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """One seed of the paper testbed unless `args` say otherwise."""
    return cli(
        monkeypatch,
        capsys,
        "runtime",
        "simulate",
        "--setup",
        "paper-testbed",
        "--seeds",
        "1",
        *args,
    )


def test_json_is_one_object_with_the_contract_schema(monkeypatch, capsys) -> None:
    code, out, _ = simulate(monkeypatch, capsys, "--json", "--tau", "0.95", "--lam", "0.7")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 1
    payload = json.loads(lines[0])
    assert set(payload) >= KEYS
    assert set(payload["ablation"]) == ABLATIONS
    for entry in (payload["baseline"], payload["serverless"], *payload["ablation"].values()):
        assert {"step_s", "gpu_s", "cost_usd"} <= set(entry)
    b, s = payload["baseline"], payload["serverless"]
    assert payload["speedup"] == pytest.approx(b["step_s"] / s["step_s"])
    assert payload["cost_cut"] == pytest.approx(1 - s["gpu_s"] / b["gpu_s"])
    assert payload["config"]["tau"] == 0.95 and payload["config"]["lam"] == 0.7
    assert payload["config"]["n_gpus"] == 16


def test_table_without_json(monkeypatch, capsys) -> None:
    code, out, _ = simulate(monkeypatch, capsys)
    assert code == 0
    assert "baseline" in out and "no-migrate" in out and "paper: 1.35x" in out


def test_profile_and_gpus_options(monkeypatch, capsys) -> None:
    code, out, _ = simulate(
        monkeypatch, capsys, "--json", "--gpus", "8", "--profile", "qwen2.5-7b-h100"
    )
    assert code == 0, out
    config = json.loads(out)["config"]
    assert config["n_gpus"] == 8 and config["profile"]["name"] == "qwen2.5-7b-h100"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--setup", "paper-huge"], "--setup"),
        (["--tau", "0"], "--tau"),
        (["--tau", "1.5"], "--tau"),
        (["--lam", "2"], "--lam"),
        (["--gpus", "0"], "--gpus"),
        (["--setup", "paper-large", "--gpus", "10"], "--gpus"),
        (["--seeds", "0"], "--seeds"),
        (["--profile", "/no/such/file.yaml"], "no such profile"),
    ],
)
def test_bad_options_are_one_line_exit_2(monkeypatch, capsys, args, needle) -> None:
    one_line_exit_2(*simulate(monkeypatch, capsys, *args), needle)


def bad_profile(tmp_path: Path, **change) -> str:
    fields = {**vars(load_profile("qwen2.5-7b-l40s")), **change}
    fields = {k: v for k, v in fields.items() if v is not None}
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(fields))
    return str(path)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"max_batch": 0}, "max_batch"),
        ({"decode_s_per_step": -0.02}, "decode_s_per_step"),
        ({"cold_start_s": -1}, "cold_start_s"),
        ({"train_s_per_token": None}, "train_s_per_token"),  # missing
        (
            {"decode_s_per_step": 0, "decode_s_per_seq": 0, "decode_compute_s_per_seq": 0},
            "inconsistent decode times",
        ),
        ({"kv_capacity_tokens": 3000}, "cannot hold one sequence of 3072 tokens"),
    ],
)
def test_inconsistent_profile_is_one_line_exit_2(monkeypatch, capsys, tmp_path, change, needle):
    path = bad_profile(tmp_path, **change)
    one_line_exit_2(*simulate(monkeypatch, capsys, "--profile", path), path, needle)


def test_negative_price_is_one_line_exit_2(monkeypatch, capsys, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"serverless_gpu_s": -0.5}))
    result = simulate(monkeypatch, capsys, "--prices", str(prices))
    one_line_exit_2(*result, "serverless_gpu_s", str(prices))
