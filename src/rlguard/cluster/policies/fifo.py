"""FIFO in submission order, never preempting, in the two forms schedulers use.

`fifo` backfills: a job that does not fit the free GPUs is skipped and a later one that fits
starts (the Tiresias simulator's `fjf`, "fit job first"). `fifo-strict` does not: the first job
that does not fit blocks every job behind it, even when GPUs sit idle (head-of-line blocking, the
Tiresias simulator's `fifo`).
"""

from __future__ import annotations

import numpy as np

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView


class Fifo(Policy):
    name = "fifo"
    preemptive = False

    def priority(self, view: ClusterView) -> np.ndarray:
        return view.submit_s


class FifoStrict(Fifo):
    name = "fifo-strict"
    backfill = False
