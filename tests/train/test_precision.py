"""Mixed precision: forwards in bf16/fp16 under autocast, weights and AdamW state in fp32, fp16's
loss scale kept across a checkpoint; no mixed precision (the default) changes nothing."""

from __future__ import annotations

import pytest
import torch

from fixed_world import make_trainer, write_world
from rlguard.train import checkpoint


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path)


def logits_dtypes(trainer):
    """The dtypes of every LM-head output (policy and reference) from now on."""
    seen = set()
    for model in (trainer.models.policy, trainer.reference.model):
        model.lm_head.register_forward_hook(lambda module, args, out: seen.add(out.dtype))
    return seen


def flat_grad(trainer):
    return torch.cat([p.grad.flatten() for p in trainer.models.policy.parameters()])


def test_a_bf16_step_on_cpu_keeps_fp32_weights_and_optimizer_state(world):
    plain, bf16 = make_trainer(world), make_trainer(world, loop={"mixed_precision": "bf16"})
    plain_dtypes, bf16_dtypes = logits_dtypes(plain), logits_dtypes(bf16)
    plain.training_step(1)
    bf16.training_step(1)
    assert plain_dtypes == {torch.float32}  # the default: nothing changes
    assert bf16_dtypes == {torch.bfloat16}  # policy and reference forwards ran in bf16
    assert {p.dtype for p in bf16.models.policy.parameters()} == {torch.float32}
    state = bf16.optimizer.state.values()
    assert state and {s[k].dtype for s in state for k in ("exp_avg", "exp_avg_sq")} == {
        torch.float32
    }
    # the same update to bf16's ~3 significant digits, and not bit-identical
    a, b = flat_grad(plain), flat_grad(bf16)
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.99
    assert not torch.equal(a, b)


def test_fp16_scales_the_loss_and_its_scale_survives_a_checkpoint(world, tmp_path):
    trainer = make_trainer(world, loop={"mixed_precision": "fp16"})
    dtypes = logits_dtypes(trainer)
    scaler = trainer.loss_scale.scaler
    plain = make_trainer(world)
    plain.training_step(1)
    trainer.training_step(1)
    assert dtypes == {torch.float16}
    # finite scaled gradients: the step was taken and the scale kept (GradScaler's 2**16)
    assert scaler.get_scale() == 65536.0
    # the optimizer saw unscaled gradients
    a, b = flat_grad(plain), flat_grad(trainer)
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.99
    assert b.norm() == pytest.approx(float(a.norm()), rel=0.05)
    saved = checkpoint.save_checkpoint(
        tmp_path / "ckpt",
        1,
        trainer._trained(),
        trainer.optimizer,
        {},
        {"scaler": trainer.loss_scale},
    )
    assert (saved / "scaler.pt").is_file()
    resumed = make_trainer(world, loop={"mixed_precision": "fp16"})
    checkpoint.load_checkpoint(
        saved, resumed._trained(), resumed.optimizer, {"scaler": resumed.loss_scale}
    )
    assert resumed.loss_scale.scaler.state_dict() == scaler.state_dict()
    assert scaler.state_dict()["_growth_tracker"] == 1  # one good step towards growing


def test_without_fp16_a_checkpoint_has_no_loss_scale(world, tmp_path):
    trainer = make_trainer(world, loop={"mixed_precision": "bf16"})
    saved = checkpoint.save_checkpoint(
        tmp_path, 1, trainer._trained(), trainer.optimizer, {}, {"scaler": trainer.loss_scale}
    )
    assert not (saved / "scaler.pt").exists()


@pytest.mark.cuda
@pytest.mark.parametrize("mode", ["bf16", "fp16"])
def test_a_mixed_precision_step_on_cuda(world, mode):
    trainer = make_trainer(
        world, optimizers=("ppo", "crpg"), loop={"device": "cuda", "mixed_precision": mode}
    )
    dtypes = logits_dtypes(trainer)
    metrics = trainer.training_step(1)
    assert dtypes == {torch.bfloat16 if mode == "bf16" else torch.float16}
    assert {p.dtype for p in trainer.models.policy.parameters()} == {torch.float32}
    assert torch.isfinite(torch.tensor(metrics["grad_norm"]))
