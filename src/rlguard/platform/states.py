"""Job states (lowercase, as OpenAI's fine-tuning jobs and Fireworks' early_stopped)."""

VALIDATING, QUEUED, STARTING, RUNNING, STOPPING = (
    "validating",
    "queued",
    "starting",
    "running",
    "stopping",
)
SUCCEEDED, EARLY_STOPPED, FAILED, CANCELLED = "succeeded", "early_stopped", "failed", "cancelled"
PREEMPTED = "preempted"  # recorded in the event history; the job itself goes back to queued

TERMINAL = frozenset({SUCCEEDED, EARLY_STOPPED, FAILED, CANCELLED})
ON_GPUS = frozenset({STARTING, RUNNING, STOPPING})
ALL = (VALIDATING, QUEUED, STARTING, RUNNING, STOPPING, *sorted(TERMINAL))

# Why a job on its GPUs is stopping: each ends it differently.
EARLY_STOP, CANCEL, PREEMPT = "early_stop", "cancel", "preempt"
