"""A job's quote at submission, from the runtime's calibrated simulator (runtime/calib/quote.py),
and the estimate the scheduling policy is given.

A job is quoted when it carries a `setup` (the model, GPUs, batch and lengths it runs, as
`rlguard runtime simulate --setup` reads them). The simulator models verl-style RLHF steps of
catalog models on catalog GPUs, so a train job without a setup is not quoted: `rlguard train`
runs the model its config names (a local checkpoint) on whatever devices the job is given, and no
calibrated number describes that. Its quote says so rather than inventing one.
"""

from __future__ import annotations

from typing import Any

from rlguard.errors import InputError
from rlguard.platform.schemas import JobCreate
from rlguard.runtime.calib.quote import quote

DEFAULT_ESTIMATE_S = 3600.0  # what a policy is given for a job with neither estimate nor quote

NO_SETUP = {
    "command": "no setup: give `setup` (model, gpu, n_gpus, batch, lengths and steps, as "
    "`rlguard runtime simulate --setup` reads them) to be quoted",
    "train": "not quoted: the simulator prices verl-style GPU RLHF steps of catalog models "
    "(runtime/sim/hardware.py); a train job runs the model its config names on the devices it "
    "is given, which no calibrated number describes. Give `setup` for the GPU job it stands for",
}


def quote_job(body: JobCreate, spec: dict[str, Any]) -> dict[str, Any]:
    """The job's quote, or why it has none; InputError `setup: FIELD: ...` for a setup that
    cannot be quoted (unplaceable, no step count, GPUs other than the job's)."""
    kind = "train" if body.config is not None else "command"
    setup = body.setup
    if setup is None:
        return {"status": "unquoted", "reason": NO_SETUP[kind]}
    if setup.n_gpus != body.gpus:
        raise InputError(
            f"setup: n_gpus: {setup.n_gpus} GPUs, but the job asks for {body.gpus} (gpus), "
            "so the quote would price another job"
        )
    steps = setup.steps or (spec["config"].get("steps") if kind == "train" else None)
    if steps is None:
        raise InputError("setup: steps: how many steps the job runs is needed for its total")
    return quote(setup, int(steps))


def estimate_s(body: JobCreate, quoted: dict[str, Any]) -> float:
    """The user's estimate, else the quote's total time, else the default."""
    if body.estimate_s is not None:
        return body.estimate_s
    return quoted.get("total_s") or DEFAULT_ESTIMATE_S


def estimate_source(spec: dict[str, Any], quoted: dict[str, Any] | None) -> str:
    """Where a job's `estimate_s` came from: the user, its quote, or the default."""
    if spec.get("estimate_s") is not None:
        return "user"
    return "quote" if quoted and quoted.get("status") == "quoted" else "default"
