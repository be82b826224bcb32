"""One CGPO policy step with fixed rollouts: the rho-weighted multi-task gradient, the calibrated
reward of the baseline, and every optimizer's objective on real models."""

from __future__ import annotations

import pytest
import torch

from fixed_world import ANSWERS, FixedRollout, length_reward, make_trainer, write_world
from rlguard.train.accumulate import accumulate
from rlguard.train.config import CGPOConfig
from rlguard.train.logprobs import token_logprobs
from rlguard.train.objectives import OBJECTIVES
from rlguard.train.trainer import CGPOTrainer
from tiny_models import tiny_causal_lm


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path)


def unweighted_gradient(trainer, index, batch, micro_batch_size=None):
    """Backward of one task's loss without its weight rho; the task's stats."""
    task = trainer.tasks[index].config
    objective = OBJECTIVES[task.optimizer]
    return accumulate(
        objective,
        trainer.models,
        batch,
        task,
        micro_batch_size,
        lambda loss: loss.backward(),
        identity,
    )


def identity(tensor):
    return tensor


def grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_a_multi_task_step_is_the_rho_weighted_sum_of_task_gradients(world):
    trainer = make_trainer(world, optimizers=("crpg", "codpo"))
    policy = trainer.models.policy
    per_task = []
    for index in range(2):
        policy.zero_grad()
        torch.manual_seed(0)
        unweighted_gradient(trainer, index, trainer.task_batch(index, step=1)[0])
        per_task.append(grads(policy))
    trainer.training_step(1)
    combined = grads(policy)
    assert combined
    for name, grad in combined.items():
        expected = 0.7 * per_task[0][name] + 0.3 * per_task[1][name]
        torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-6)


def test_the_baseline_answer_has_calibrated_reward_one_half(world):
    trainer = make_trainer(world)
    task = trainer.tasks[0]
    rows = [0, 1]
    batch = trainer.sample_and_score(task, rows)
    assert [task.baselines[r].text for r in rows] == ["It is 5.", "Five."]
    # the reward of a_bar against itself: sigmoid(r(a_bar) - r(a_bar)) = 0.5 exactly
    a_bar = torch.tensor([task.baselines[r].reward for r in rows])
    assert torch.sigmoid(a_bar - task.baseline_rewards(rows)).tolist() == [0.5, 0.5]
    expected = torch.sigmoid(
        torch.tensor([len(a) / 10 for a in ANSWERS] * 2) - a_bar.repeat_interleave(4)
    )
    torch.testing.assert_close(batch.calibrated, expected)
    assert batch.passed.tolist() == [True, False, False, True] * 2


@pytest.mark.parametrize("optimizer", ["crpg", "crraft", "codpo", "grpo", "ppo"])
def test_every_optimizer_takes_a_step_that_changes_the_policy(world, optimizer):
    trainer = make_trainer(world, optimizers=(optimizer, optimizer), kl_max=5.0)
    before = {n: p.detach().clone() for n, p in trainer.models.policy.named_parameters()}
    metrics = trainer.training_step(1)
    assert metrics["a/constraint_satisfaction"] == 0.5
    changed = any(
        not torch.equal(before[n], p) for n, p in trainer.models.policy.named_parameters()
    )
    assert changed and torch.isfinite(torch.tensor(metrics["grad_norm"]))


def test_crraft_falls_back_to_a_passing_baseline(world):
    """The answer is 7, so every sample fails the math judge: prompt 0's a_bar passes and is
    learned from; prompt 1's a_bar has no final-answer statement, so that prompt is skipped."""
    trainer = make_trainer(world, optimizers=("crraft", "crraft"))
    task = trainer.tasks[0]
    for metadata in task.prompts.metadata:
        metadata["answer"] = "7"
    task.prompts.references[:] = ["The final answer is 7.", "It is 7."]
    task.sample = lambda seed, step, index: [0, 1]
    metrics = trainer.task_gradient(0, trainer.task_batch(0, step=1)[0])
    assert metrics["fallback"] == 1.0 and metrics["selected"] == 0.0


def test_eval_event_scores_gold_when_given_else_the_pass_rate(world):
    trainer = make_trainer(world)
    trainer.tasks[0].gold = lambda prompts, completions: [
        1.0 if "5" in c else 0.0 for c in completions
    ]
    result = trainer.evaluate(step=0)
    # FixedRollout answers the two eval prompts with ANSWERS[0] (says 5) and ANSWERS[1] (says 4)
    assert result["metrics"]["eval/a/gold"] == 0.5
    assert result["metrics"]["eval/a/constraint_satisfaction"] == 0.5
    trainer.tasks[0].gold = lambda prompts, completions: [1.0, 1.0]
    result = trainer.evaluate(step=0)
    assert result["metrics"]["eval/b/constraint_satisfaction"] == 0.5
    assert result["event"]["score"] == pytest.approx(0.7 * 1.0 + 0.3 * 0.5)
    proxy = (len(ANSWERS[0]) + len(ANSWERS[1])) / 2 / 10
    assert result["event"]["proxy"] == pytest.approx(proxy)


def test_lora_policy_uses_its_base_as_reference_and_checkpoints_only_adapters(world, tmp_path):
    from safetensors.torch import load_file

    from rlguard.train import checkpoint

    _, tokenizer = world
    base = make_trainer(world).args.model_dump()
    config = CGPOConfig.model_validate({**base, "lora": {"r": 4, "alpha": 8}})
    trainer = CGPOTrainer(
        config,
        model=tiny_causal_lm(tokenizer),
        processing_class=tokenizer,
        reward_funcs={"a": length_reward, "b": length_reward},
        rollout_engine=FixedRollout(tokenizer),
        progress=False,
    )
    batch = trainer.sample_and_score(trainer.tasks[0], [0, 1])
    policy_logp = token_logprobs(trainer.models.policy, batch.rollouts)
    torch.testing.assert_close(policy_logp, batch.ref_logp)  # LoRA's B starts at zero
    trainer.training_step(1)
    after = token_logprobs(trainer.models.policy, batch.rollouts)
    with trainer.reference.context():
        reference = token_logprobs(trainer.reference.model, batch.rollouts)
    torch.testing.assert_close(reference, batch.ref_logp)  # the base did not move
    assert not torch.allclose(after, batch.ref_logp)
    path = checkpoint.save_checkpoint(
        tmp_path, 1, trainer._trained(), trainer.optimizer, {"best_score": None}
    )
    saved = load_file(path / "policy.safetensors")
    assert saved and all("lora_" in name for name in saved)


@pytest.mark.parametrize(("optimizer", "clip_stat"), [("ppo", "clipfrac"), ("grpo", "clip_ratio")])
def test_several_updates_per_batch_clip_against_the_sampling_policy(world, optimizer, clip_stat):
    """Ratios are taken against the sampling-time log-probs, so clipping binds only once later
    updates of the same batch have moved the policy."""
    clipped = {}
    for updates in (1, 4):
        loop = {"updates_per_batch": updates, "learning_rate": 3e-2}
        trainer = make_trainer(world, optimizers=(optimizer, optimizer), loop=loop)
        clipped[updates] = trainer.training_step(1)[f"a/{clip_stat}"]
    assert clipped[1] == 0.0 and clipped[4] > 0.0


def test_eval_samples_judge_each_answer_against_its_own_prompt(world):
    """Two answers per prompt: prompt 0 gets ANSWERS[0:2], prompt 1 gets ANSWERS[2:4]. With prompt
    1's answer changed to 4, only ANSWERS[0] passes the math judge."""
    trainer = make_trainer(world, loop={"eval_samples": 2, "eval_temperature": 1.0})
    trainer.tasks[0].eval_prompts.metadata[1]["answer"] = "4"
    metrics = trainer.evaluate(step=0)["metrics"]
    assert metrics["eval/a/constraint_satisfaction"] == 0.25
    assert metrics["eval/b/constraint_satisfaction"] == 0.5
    assert metrics["eval/a/reward"] == pytest.approx(sum(len(a) for a in ANSWERS) / 4 / 10)


def test_eval_measures_kl_to_the_reference_on_the_first_answer_to_each_prompt(world):
    trainer = make_trainer(world, loop={"eval_samples": 2, "eval_temperature": 1.0})
    assert trainer.evaluate(step=0)["metrics"]["eval/a/seq_kl"] == pytest.approx(0.0, abs=1e-6)
    policy = trainer.models.policy
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.randn_like(p))
    prompts = trainer.tasks[0].eval_prompts.texts
    answers = FixedRollout(trainer.tokenizer).generate(prompts, 2, 8, 1.0).select([0, 2])
    with torch.no_grad():
        expected = token_logprobs(policy, answers) - token_logprobs(
            trainer.reference.model, answers
        )
    metrics = trainer.evaluate(step=0)["metrics"]
    assert metrics["eval/a/seq_kl"] == pytest.approx(float(expected.sum(dim=1).mean()), rel=1e-5)
    assert metrics["eval/a/seq_kl"] != pytest.approx(0.0, abs=1e-3)


def test_several_eval_answers_per_prompt_need_sampling(world):
    with pytest.raises(ValueError, match="eval_temperature > 0"):
        make_trainer(world, loop={"eval_samples": 2, "eval_temperature": 0.0})


def test_side_scores_are_logged_at_each_step_and_eval_and_never_trained_on(world):
    says_5 = lambda prompts, completions: [1.0 if "5" in c else 0.0 for c in completions]  # noqa: E731
    trainer = make_trainer(world, optimizers=("grpo", "grpo"))
    trainer.tasks[0].scores = {"five": says_5}
    torch.manual_seed(0)
    with_score = trainer.training_step(1)
    assert with_score["a/score/five"] == pytest.approx(0.5)  # ANSWERS: half say 5
    assert "b/score/five" not in with_score
    assert trainer.evaluate(step=1)["metrics"]["eval/a/score/five"] == 0.5
    plain = make_trainer(world, optimizers=("grpo", "grpo"))
    torch.manual_seed(0)
    plain.training_step(1)
    for (name, p), q in zip(
        trainer.models.policy.named_parameters(), plain.models.policy.parameters(), strict=True
    ):
        torch.testing.assert_close(p, q, msg=name)  # the score took no part in the update
