"""Micro-batches and gradient checkpointing bound a step's memory without changing its update.

Every optimizer's step with micro-batches must give the gradient of the step without them (whole-
batch statistics, whole-batch denominators), over two updates of the same batch, on a policy
moved away from the reference so the KL terms, the KL filter and the clipping all bind.
"""

from __future__ import annotations

import pytest
import torch

from fixed_world import MIXED_ROWS, away_from_reference, make_trainer, write_world
from rlguard.train.accumulate import micro_batches

OPTIMIZERS = ["crpg", "crraft", "codpo", "grpo", "ppo"]
SAMPLES = 18  # 6 prompts x k=3 per task


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path, MIXED_ROWS)


def trainer_for(world, optimizer, **loop):
    trainer = make_trainer(
        world,
        optimizers=(optimizer, optimizer),
        loop={"learning_rate": 3e-2, **loop},
        k=3,
        batch_size=6,
        kl_max=1.0,
    )
    return away_from_reference(trainer)


def step(world, optimizer, **loop):
    """(every trained parameter's gradient in the step's last update, the step's metrics)."""
    trainer = trainer_for(world, optimizer, **loop)
    metrics = trainer.training_step(1)
    grads = {
        f"{model}.{name}": p.grad.clone()
        for model, module in trainer._trained().items()
        for name, p in module.named_parameters()
    }
    return grads, metrics


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("micro_batch_size", [1, 5])
def test_micro_batches_give_the_whole_batch_update(world, optimizer, micro_batch_size):
    whole, whole_metrics = step(world, optimizer, updates_per_batch=2)
    micro, micro_metrics = step(
        world, optimizer, updates_per_batch=2, micro_batch_size=micro_batch_size
    )
    assert whole.keys() == micro.keys()
    assert any(g.abs().max() > 1e-3 for g in whole.values())
    for name, grad in whole.items():
        # measured: at most 7.2e-7 apart (gradients up to 3.8)
        torch.testing.assert_close(micro[name], grad, rtol=1e-5, atol=2e-6, msg=name)
    assert micro_metrics.keys() == whole_metrics.keys()
    for key, value in whole_metrics.items():
        assert micro_metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


def test_the_step_exercises_every_branch_it_claims(world):
    """The equivalence above covers selection, fallback, skipped prompts, KL and clipping."""
    crraft = step(world, "crraft")[1]
    assert crraft["a/selected"] == 4 and crraft["a/fallback"] == 1  # one prompt skipped
    assert step(world, "codpo")[1]["a/pairs"] == 4  # two prompts without a positive
    crpg = step(world, "crpg")[1]
    assert crpg["a/seq_kl"] < -0.5  # the policy is away from the reference
    assert step(world, "grpo", updates_per_batch=2)[1]["a/clip_ratio"] > 0
    assert step(world, "ppo", updates_per_batch=2)[1]["a/clipfrac"] > 0


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize(("micro_batch_size", "largest"), [(None, SAMPLES), (4, 4)])
def test_no_forward_sees_more_rows_than_a_micro_batch(world, optimizer, micro_batch_size, largest):
    trainer = trainer_for(world, optimizer, micro_batch_size=micro_batch_size)
    rows = []

    def count(module, args, kwargs):
        rows.append(kwargs["input_ids"].shape[0])

    models = [trainer.models.policy, trainer.reference.model, trainer.models.critic]
    for model in filter(None, models):
        model.register_forward_pre_hook(count, with_kwargs=True)
    trainer.training_step(1)
    # CRRAFT trains on 5 of its 18 samples and CODPO on 8, but their sampling pass sees all 18
    assert max(rows) == largest


def test_micro_batches_never_split_a_unit():
    assert micro_batches(7, None) == [slice(0, 7)]
    assert micro_batches(7, 3) == [slice(0, 3), slice(3, 6), slice(6, 7)]
    assert micro_batches(8, 5, unit=2) == [slice(0, 4), slice(4, 8)]
    assert micro_batches(4, 1, unit=2) == [slice(0, 2), slice(2, 4)]
    assert micro_batches(0, 3) == []


def saved_activation_bytes(trainer):
    """Bytes autograd keeps for backward during one step (outside checkpointed layers, whose
    own hooks drop their activations and recompute them)."""
    total = [0]

    def pack(tensor):
        total[0] += tensor.numel() * tensor.element_size()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        trainer.training_step(1)
    return total[0]


@pytest.mark.parametrize("optimizer", ["crpg", "ppo"])
def test_gradient_checkpointing_keeps_fewer_activations_for_the_same_update(world, optimizer):
    plain = trainer_for(world, optimizer)
    checkpointed = trainer_for(world, optimizer, gradient_checkpointing=True)
    kept = saved_activation_bytes(plain)
    assert saved_activation_bytes(checkpointed) < kept / 2
    for model, module in plain._trained().items():
        other = dict(checkpointed._trained()[model].named_parameters())
        for name, p in module.named_parameters():
            torch.testing.assert_close(other[name].grad, p.grad, rtol=1e-5, atol=1e-6)
