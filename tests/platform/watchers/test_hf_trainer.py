"""A real HF Trainer (tiny model, CPU) with report_to=tensorboard and evals, watched while it
trains through the transformers preset: by its TensorBoard files and by its checkpoints'
trainer_state.json, with the same evals and the same delivered checkpoint. Its output_dir is the
job's `output/`, as a command job's $RLGUARD_OUTPUT_DIR.

The eval metric is scripted (tests/train/test_hf_callback.py): 0.2, 0.4, 0.6, 0.5, 0.4, 0.3 at
steps 2, 4, ..., 12; checkpoints every 5 steps, so the best eval (step 6) has no checkpoint of
its own and checkpoint-5 is delivered: the last saved before it.
"""

from __future__ import annotations

import pytest
from transformers import Trainer, TrainerCallback

from rlguard.platform import jobspec
from rlguard.platform.watchers import Watcher, WatchSpec
from tiny_models import tiny_causal_lm, tiny_tokenizer
from train.test_hf_callback import HUMP, Script, Texts, args

pytestmark = pytest.mark.slow


class PollEachStep(TrainerCallback):
    """Polls the watchers at each step end, while the Trainer's files are still growing."""

    def __init__(self, watchers) -> None:
        self.watchers, self.polls = watchers, 0
        self.reported_by: dict[int, int] = {}  # TensorBoard eval step -> the step it was read at

    def on_step_end(self, _args, state, *_rest, **_kwargs):
        for watcher in self.watchers:
            watcher.poll()
        self.polls += 1
        for step in self.watchers[0].reported:
            self.reported_by.setdefault(step, state.global_step)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf")
    records = {"tensorboard": [], "trainer_state": []}
    checkpoints = {"tensorboard": [], "trainer_state": []}
    warnings = []
    watchers = {}
    for source, tag in (("tensorboard", "eval/score"), ("trainer_state", "eval_score")):
        spec = WatchSpec(preset="transformers", source=source, eval_tag=tag, mode="max")
        watchers[source] = Watcher(
            spec,
            out,
            lambda records=records[source], **r: records.append(r),
            lambda s, p, m, found=checkpoints[source]: found.append((s, p, m)),
            warnings.append,
        )
    tokenizer = tiny_tokenizer()
    overrides = {"max_steps": 12, "save_total_limit": None, "report_to": ["tensorboard"]}
    poller = PollEachStep(list(watchers.values()))
    Trainer(
        model=tiny_causal_lm(tokenizer),
        args=args(out / jobspec.OUTPUT, **overrides),
        train_dataset=Texts(tokenizer, 8),
        eval_dataset=Texts(tokenizer, 2),
        compute_metrics=Script("score", HUMP),
        callbacks=[poller],
    ).train()
    for watcher in watchers.values():
        watcher.poll()  # the job ended: one last poll
    return out, watchers, records, checkpoints, warnings, poller


@pytest.mark.parametrize("source", ["tensorboard", "trainer_state"])
def test_the_trainers_evals_and_checkpoints(trained, source):
    _, watchers, records, checkpoints, warnings, poller = trained
    evals = records[source]
    assert [e["step"] for e in evals] == [2, 4, 6, 8, 10, 12]
    assert [round(e["score"], 6) for e in evals] == HUMP[:6]
    # max_steps is read from checkpoint-N/trainer_state.json: before the first save (step 5)
    # the TensorBoard watcher reads progress 0, and says so once
    early = [0.0, 0.0] if source == "tensorboard" else [2 / 12, 4 / 12]
    assert [e["progress"] for e in evals] == pytest.approx(early + [s / 12 for s in (6, 8, 10, 12)])
    assert all(e["loss"] is not None for e in evals)  # train loss logged at each step
    assert [(s, p) for s, p, _ in checkpoints[source]] == [
        (5, "output/checkpoint-5"),
        (10, "output/checkpoint-10"),
        (12, "output/checkpoint-12"),
    ]
    delivery = watchers[source].delivered()
    assert (delivery.best_step, delivery.step, delivery.path) == (6, 5, "output/checkpoint-5")
    assert delivery.rule == "last_before_best_eval"
    assert [w.code for w in warnings] == ["no_total_steps"]  # the TensorBoard watcher's
    assert poller.polls == 12


def test_evals_are_read_while_training(trained):
    """The Trainer evaluates after a step's on_step_end: the TensorBoard watcher reads each eval
    at the next step's poll, while the run goes on (step 12's at the last poll, after train)."""
    *_, poller = trained
    assert poller.reported_by == {2: 3, 4: 5, 6: 7, 8: 9, 10: 11}
