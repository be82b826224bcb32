"""Metric watchers: EvalStop for jobs that do not speak rlguard (docs/watchers.md).

A `WatchSpec` says where a framework writes its metrics and checkpoints (a TensorBoard
directory, a JSONL file, stdout lines through a regex, HF's trainer_state.json), or names a
preset (verl, trl, transformers, openrlhf, nemo-rl) that says it. A `Watcher` tails those files
and reports evals and checkpoints through callables, as `JobReporter` would.
"""

from rlguard.platform.watchers.checkpoints import Delivery
from rlguard.platform.watchers.points import WatchWarning
from rlguard.platform.watchers.spec import WatchSpec
from rlguard.platform.watchers.watcher import EvalReport, Watcher

__all__ = ["Delivery", "EvalReport", "WatchSpec", "WatchWarning", "Watcher"]
