"""Devices: names checked in the config, resolved on the machine (`auto` = CUDA if present), a
per-model override before the run's default, and every tensor of a step on its model's device."""

from __future__ import annotations

import pytest
import torch

from fixed_world import make_trainer, write_world
from rlguard.errors import InputError
from rlguard.train.devices import check_name, resolve

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path)


@pytest.mark.parametrize("name", ["auto", "cpu", "cuda", "cuda:0", "cuda:12", "mps"])
def test_device_names_users_write_are_accepted(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["gpu", "cuda:", "cuda:x", "CPU", "cuda0", "tpu:0", ""])
def test_other_names_are_rejected_with_the_list(name):
    with pytest.raises(ValueError, match="auto, cpu, cuda, cuda:N or mps"):
        check_name(name)


def test_auto_is_cuda_when_present_else_cpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve("auto", "device").type == expected


def test_a_missing_gpu_is_an_error_naming_the_field():
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(InputError, match=rf"^devices.reference: cuda:{count} is not available"):
        resolve(f"cuda:{count}", "devices.reference")


def test_each_data_parallel_process_gets_its_own_gpu(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert resolve("auto", "device") == torch.device("cuda:3")
    assert resolve("cuda", "device") == torch.device("cuda:3")
    assert resolve("cuda:1", "device") == torch.device("cuda:1")


@NO_CUDA
def test_per_model_devices_override_the_default(world):
    """`device: cuda` fails here, so a trainer that starts used every override."""
    everywhere = dict.fromkeys(("policy", "reference", "critic", "reward"), "cpu")
    loop = {"device": "cuda", "devices": everywhere}
    trainer = make_trainer(world, optimizers=("ppo", "crpg"), loop=loop)
    assert trainer.device == torch.device("cpu")
    with pytest.raises(InputError, match=r"^device: cuda:0 is not available"):
        make_trainer(world, loop={"device": "cuda"})
    with pytest.raises(InputError, match=r"^devices.critic: cuda:0"):
        make_trainer(world, optimizers=("ppo", "crpg"), loop={"devices": {"critic": "cuda"}})


def batch_devices(batch):
    tensors = [
        batch.rollouts.prompt_ids,
        batch.rollouts.completion_ids,
        batch.rollouts.completion_mask,
        batch.passed,
        batch.rewards,
        batch.ref_logp,
        batch.old_logp,
        batch.calibrated,
        batch.baseline_passed,
    ]
    return {t.device for t in tensors if t is not None}


@pytest.mark.cuda
@pytest.mark.parametrize("optimizer", ["crpg", "crraft", "codpo", "grpo", "ppo"])
def test_a_cuda_step_keeps_every_tensor_on_the_policy_gpu(world, optimizer):
    """The reference and the reward stay on the CPU: their outputs move to the GPU once."""
    loop = {"device": "cuda", "devices": {"reference": "cpu", "reward": "cpu"}}
    trainer = make_trainer(world, optimizers=(optimizer, optimizer), loop=loop)
    assert trainer.reference.model.device.type == "cpu"
    batch, _ = trainer.task_batch(0, step=1)
    trainer.task_gradient(0, batch)
    assert batch_devices(batch) == {trainer.device} and trainer.device.type == "cuda"
    metrics = trainer.training_step(2)
    assert torch.isfinite(torch.tensor(metrics["grad_norm"]))
