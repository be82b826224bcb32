"""Job states (lowercase, as OpenAI's fine-tuning jobs and Fireworks' early_stopped) and the
transitions between them: the job lifecycle's one table, enforced by `Platform.transition`."""

VALIDATING, QUEUED, STARTING, RUNNING, STOPPING = (
    "validating",
    "queued",
    "starting",
    "running",
    "stopping",
)
PAUSED = "paused"  # OpenAI's: holds no GPUs and is not scheduled until resumed
SUCCEEDED, EARLY_STOPPED, FAILED, CANCELLED = "succeeded", "early_stopped", "failed", "cancelled"
PREEMPTED = "preempted"  # recorded in the event history; the job itself goes back to queued

TERMINAL = frozenset({SUCCEEDED, EARLY_STOPPED, FAILED, CANCELLED})
ON_GPUS = frozenset({STARTING, RUNNING, STOPPING})
ALL = (VALIDATING, QUEUED, STARTING, RUNNING, STOPPING, PAUSED, *sorted(TERMINAL))

NEW = None
"""The status of a job not yet in the store: its only way in is `validating`."""

TRANSITIONS: dict[str | None, frozenset[str]] = {
    NEW: frozenset({VALIDATING}),
    VALIDATING: frozenset({QUEUED, FAILED}),  # failed: its requirements did not resolve
    QUEUED: frozenset({STARTING, PAUSED, CANCELLED}),
    # A starting job ends like a running one: it is `starting` until Ray has its process, and
    # stays so if the server restarts in between and reattaches it.
    STARTING: frozenset({RUNNING, STOPPING, QUEUED, SUCCEEDED, FAILED}),
    RUNNING: frozenset({STOPPING, QUEUED, SUCCEEDED, FAILED}),
    # A stopping job ends as why it stops says (`intent`): a preempted one is requeued and a
    # paused one paused, or either succeeded if it finished first; an early-stopped or cancelled
    # one ends so whatever its exit.
    STOPPING: frozenset({QUEUED, PAUSED, SUCCEEDED, EARLY_STOPPED, CANCELLED}),
    PAUSED: frozenset({QUEUED, CANCELLED}),  # resumed, or cancelled while paused
    **{status: frozenset() for status in TERMINAL},  # nothing leaves a terminal state
}
"""Every legal status change, from -> to (docs/platform.md, "Jobs", shows the same table)."""

# Why a job on its GPUs is stopping: each ends it differently.
EARLY_STOP, CANCEL, PREEMPT, PAUSE = "early_stop", "cancel", "preempt", "pause"
