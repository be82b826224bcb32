"""Data parallelism over 2 gloo processes on this CPU machine, launched through accelerate: the
same global batch takes the same update as in one process, for every optimizer, with the models
whole in each process or FSDP-sharded; a 2-process run (`rlguard train --nproc 2`) writes its
checkpoints, eval events and metrics once, and resumed from its checkpoint continues exactly."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from dp_worker import FP16_OPTIMIZERS, MICRO_BATCH_SIZES, OPTIMIZERS, one_step
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification

import rlguard
from fixed_world import MIXED_ROWS, write_world
from rlguard.cli.train import launch
from rlguard.train import checkpoint
from rlguard.train.distributed import DataParallel
from rlguard.train.preemption import PREEMPTED_EXIT
from tiny_models import tiny_causal_lm, tiny_tokenizer

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parents[1]
SRC = Path(rlguard.__file__).parents[1]


# Launched processes import these sources and use the CPU, one thread each.
CPU_PROCESSES = {
    "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)]),
    "CUDA_VISIBLE_DEVICES": "",
    "OMP_NUM_THREADS": "1",
}


@pytest.fixture
def cpu_processes(monkeypatch):
    for name, value in CPU_PROCESSES.items():
        monkeypatch.setenv(name, value)


def test_shards_are_consecutive_and_cover_the_batch(monkeypatch):
    rows = list(range(7))
    shards = []
    for rank in range(3):
        processes = DataParallel(torch.device("cpu"))
        processes.rank, processes.size = rank, 3
        shards.append(processes.shard(rows))
    assert shards == [[0, 1], [2, 3, 4], [5, 6]]


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> tuple[tuple, Path]:
    """(the fixed world, dp_worker.py's outputs): every data-parallel case in one 2-process launch
    of CPU_PROCESSES."""
    root = tmp_path_factory.mktemp("dp")
    world = write_world(root, MIXED_ROWS)
    out = root / "out"
    with pytest.MonkeyPatch.context() as env:
        for name, value in CPU_PROCESSES.items():
            env.setenv(name, value)
        assert launch(2, [str(TESTS / "train" / "dp_worker.py"), str(root), str(out)]) == 0
    return world, out


def _ranks(out: Path, run: str, name: str) -> list[dict]:
    return [torch.load(out / run / f"{name}-{r}.pt") for r in range(2)]


def test_two_processes_take_the_one_process_update(launched):
    """With and without micro-batches in the processes: the whole batch's update either way."""
    world, out = launched
    for optimizer, size in [(o, s) for o in OPTIMIZERS for s in MICRO_BATCH_SIZES]:
        grads, _, metrics, _ = one_step(world, optimizer)
        ranks = _ranks(out, "none-no", f"{optimizer}-{size}")
        assert [r["processes"] for r in ranks] == ["2", "2"]
        for name, grad in grads.items():
            for rank in ranks:  # every process holds the summed gradient
                torch.testing.assert_close(rank["grads"][name], grad, rtol=1e-5, atol=2e-6)
        for key, value in metrics.items():  # the whole batch's, as one process logs them
            assert ranks[0]["metrics"][key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


def test_fsdp_takes_the_one_process_update(launched):
    """`sharding: fsdp` over 2 processes against one unsharded process: the last update's
    gradients as tight as data parallelism's; the weights after the step's two AdamW updates
    (lr 3e-2) within 2e-4, where float noise in near-zero gradients becomes steps of up to lr
    (unsharded data parallelism is as far: 8.2e-5 for CODPO). CRRAFT's and CODPO's selections
    leave one process fewer micro-batches than the other: it runs idle ones."""
    world, out = launched
    padded = set()
    for optimizer in OPTIMIZERS:
        grads, weights, metrics, _ = one_step(world, optimizer)
        for size in MICRO_BATCH_SIZES:
            ranks = _ranks(out, "fsdp-no", f"{optimizer}-{size}")
            for rank in ranks:
                for name, grad in grads.items():
                    torch.testing.assert_close(rank["grads"][name], grad, rtol=1e-5, atol=2e-6)
                for name, weight in weights.items():
                    torch.testing.assert_close(rank["weights"][name], weight, rtol=0, atol=2e-4)
                if any(had < ran for had, ran in rank["lockstep"]):
                    padded.add((optimizer, size))
            for key, value in metrics.items():
                assert ranks[0]["metrics"][key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    assert padded == {("crraft", 2), ("codpo", 2)}


def test_fsdp_with_fp16_skips_what_unsharded_data_parallelism_skips(launched):
    """fp16 under FSDP: every process skips the same updates with the same loss scale as
    unsharded data parallelism (whose summed gradients carry an inf to every process), and the
    updates that step agree. Which updates overflow depends on each process's share of the batch,
    so one process is not the reference here."""
    _, out = launched
    skips = set()
    for optimizer, size in [(o, s) for o in FP16_OPTIMIZERS for s in MICRO_BATCH_SIZES]:
        unsharded = _ranks(out, "none-fp16", f"{optimizer}-{size}")
        sharded = _ranks(out, "fsdp-fp16", f"{optimizer}-{size}")
        assert {r["scale"] for r in unsharded + sharded} == {unsharded[0]["scale"]}
        skips.add(round(math.log2(2.0**18 / unsharded[0]["scale"])))  # each skip halves it
        for want, got in zip(unsharded, sharded, strict=True):
            for n, grad in want["grads"].items():  # a skipped update's infs and nans included
                torch.testing.assert_close(got["grads"][n], grad, rtol=0, atol=1e-4, equal_nan=True)
            for n, weight in want["weights"].items():
                torch.testing.assert_close(got["weights"][n], weight, rtol=0, atol=1e-4)
    assert {0, 1} <= skips  # some updates stepped, some were skipped


def test_an_inf_in_one_processs_shard_skips_the_step_in_every_process(launched):
    """Under FSDP each process unscales only its shard of the gradients: a process whose shard
    is finite would step while another skips, and their weights would part. torch's GradScaler
    serves as it is: on sharded (DTensor) gradients its inf check is reduced over the processes
    (DTensor's found_inf_reduce_handler), so both skip and halve the scale."""
    _, out = launched
    ranks = [torch.load(out / "inf-shard" / f"{r}.pt") for r in range(2)]
    assert [r["moved"] for r in ranks] == [False, False]
    assert [r["scale"] for r in ranks] == [2.0**15, 2.0**15]  # GradScaler starts at 2^16


def write_run(tmp_path: Path, sharding: str = "none", device: str = "auto") -> Path:
    """A policy on disk, prompts, and a two-task config (CRPG with a_bar sampled from the
    reference, PPO with its critic)."""
    tokenizer = tiny_tokenizer()
    policy = tmp_path / "policy"
    tiny_causal_lm(tokenizer).save_pretrained(policy)
    tokenizer.save_pretrained(policy)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(r) + "\n" for r in MIXED_ROWS))
    common = {
        "baseline": "reference",  # CRPG's a_bar: sampled, once per prompt, by every process
        "prompts": str(prompts),
        "reward": {"function": "rlguard.train.toy:proxy_reward"},
        "judges": ["math"],
        "max_new_tokens": 8,
    }
    config = {
        "policy": {"path": str(policy)},
        "tasks": [
            {
                "name": "crpg",
                "optimizer": "crpg",
                "k": 3,
                "batch_size": 4,
                "baseline": "reference",
                **common,
            },
            {"name": "ppo", "optimizer": "ppo", "k": 2, "batch_size": 2, **common},
        ],
        "learning_rate": 1e-3,
        "save_every": 2,
        "eval_every": 2,
        "eval_prompts": 4,
        "tensorboard": False,
        "sharding": sharding,
        "device": device,
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def train_command(config: Path, out: Path, steps: int, nproc: int = 2) -> list[str]:
    """`rlguard train --nproc 2` on `config` with its output in `out`, for `steps` steps; with
    `nproc` 1, `rlguard train` in a group of one process that torchrun launched."""
    raw = yaml.safe_load(config.read_text())
    run = out.parent / f"{out.name}-{steps}.yaml"
    run.write_text(yaml.safe_dump({**raw, "output_dir": str(out), "steps": steps}))
    if nproc == 1:
        torchrun = ["torch.distributed.run", "--standalone", "--nproc_per_node", "1"]
        return [sys.executable, "-m", *torchrun, "-m", "rlguard.cli", "train", str(run)]
    return [sys.executable, "-m", "rlguard.cli", "train", str(run), "--nproc", str(nproc)]


def train(config: Path, out: Path, steps: int, nproc: int = 2) -> dict:
    command = train_command(config, out, steps, nproc)
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    summaries = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(summaries) == 1  # printed once, by the main process
    summary = json.loads(summaries[0])
    assert summary["processes"] == nproc and summary["steps"] == steps
    return summary


@pytest.mark.parametrize("sharding", ["none", "fsdp"])
def test_a_two_process_run_resumes_exactly(tmp_path, cpu_processes, sharding):
    assert_resumes_exactly(tmp_path, write_run(tmp_path, sharding), nproc=2)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_fsdp_in_one_launched_process_resumes_exactly(tmp_path, monkeypatch, device):
    """A group of one process still shards (FSDP2 over a mesh of one) and resumes bit for bit."""
    paths = [str(SRC), str(TESTS), *filter(None, os.environ.get("PYTHONPATH", "").split(":"))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    if device == "cpu":
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert_resumes_exactly(tmp_path, write_run(tmp_path, "fsdp", device), nproc=1)


def assert_resumes_exactly(tmp_path: Path, config: Path, nproc: int) -> None:
    """Run `config` 4 steps straight, and 2 steps then resumed to 4: the same weights, AdamW
    state, eval events and metrics rows, and a checkpoint that loads into whole models."""
    sharded = yaml.safe_load(config.read_text())["sharding"] == "fsdp"
    assert train(config, tmp_path / "straight", steps=4, nproc=nproc)["sharded"] == sharded
    train(config, tmp_path / "resumed", steps=2, nproc=nproc)  # stops at a checkpoint, goes on
    assert train(config, tmp_path / "resumed", steps=4, nproc=nproc)["resumed_from"] == 2
    final = {}
    for run in ("straight", "resumed"):
        step4 = tmp_path / run / "checkpoints" / "step-000004"
        final[run] = {
            name: load_file(step4 / f"{name}.safetensors") for name in ("policy", "critic")
        }
        final[run]["optimizer"] = torch.load(step4 / "optimizer.pt")["state"]
        rows = [
            json.loads(line) for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()
        ]
        assert [r["step"] for r in rows if "grad_norm" in r] == [1, 2, 3, 4]  # logged once
        events = (tmp_path / run / "eval_events.jsonl").read_text().splitlines()
        final[run]["events"] = [
            (e["step"], e["score"], e["proxy"]) for e in map(json.loads, events)
        ]
    assert [e[0] for e in final["straight"]["events"]] == [0, 2, 4]  # evaluated once
    assert final["resumed"]["events"] == final["straight"]["events"]
    for name in ("policy", "critic"):
        for key, tensor in final["straight"][name].items():
            torch.testing.assert_close(final["resumed"][name][key], tensor, rtol=0, atol=0)
    for index, state in final["straight"]["optimizer"].items():
        for key, tensor in state.items():
            torch.testing.assert_close(
                final["resumed"]["optimizer"][index][key], tensor, rtol=0, atol=0
            )
    loads_unsharded(tmp_path / "straight" / "checkpoints" / "step-000004", tmp_path / "policy")


def loads_unsharded(step: Path, base: Path) -> None:
    """A checkpoint (an FSDP run's too) loads into one process's whole models and AdamW."""
    policy = AutoModelForCausalLM.from_pretrained(base)
    critic = AutoModelForTokenClassification.from_pretrained(base, num_labels=1)
    params = [*policy.parameters(), *critic.parameters()]
    optimizer = torch.optim.AdamW(params)
    checkpoint.load_checkpoint(step, {"policy": policy, "critic": critic}, optimizer)
    saved = load_file(step / "policy.safetensors")  # each tied weight once
    assert len(saved) == len(list(policy.parameters()))
    for name, tensor in policy.state_dict().items():
        if name in saved:
            torch.testing.assert_close(tensor, saved[name], rtol=0, atol=0)
    assert policy.lm_head.weight is policy.model.embed_tokens.weight  # still tied
    for param in params:
        assert optimizer.state[param]["exp_avg"].shape == param.shape


def test_a_preempted_two_process_run_exits_as_preempted(tmp_path, cpu_processes):
    """SIGTERM to the run's process group (how the platform preempts): the processes checkpoint
    and the launcher exits 143, not torchrun's 1, so the platform requeues the job."""
    out = tmp_path / "preempted"
    command = train_command(write_run(tmp_path), out, steps=200)
    run = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 600
    while not (metrics.exists() and "grad_norm" in metrics.read_text()):
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()[1][-4000:]
        time.sleep(0.5)
    os.killpg(run.pid, signal.SIGTERM)
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == PREEMPTED_EXIT, stderr[-4000:]
    summary = json.loads(next(line for line in stdout.splitlines() if line.startswith("{")))
    assert summary["preempted"] and summary["steps"] < 200
    assert (out / "checkpoints" / f"step-{summary['steps']:06d}").is_dir()
