"""A job's checkpoint onto the tenant's disk (`rlguard jobs download`): picked by `best` or step,
each file streamed to OUT/NAME and checked against its manifest's size and sha256, so a file
that arrives short or altered is an error, not a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlguard.errors import InputError
from rlguard.platform.client import Client


def pick(checkpoints: list[dict[str, Any]], which: str) -> dict[str, Any]:
    """The checkpoint `which` names: `best` (the delivered one), a step number (a step with
    several checkpoints, a trainer's best weights and its resumable state, needs a name) or a
    checkpoint's name (`output/checkpoints/step-000024`)."""
    if which == "best":
        found = [c for c in checkpoints if c["is_best"]]
    elif which.isdigit():
        found = [c for c in checkpoints if c["step"] == int(which)]
        if len(found) > 1:
            names = ", ".join(c["path"] for c in found)
            raise InputError(f"--checkpoint: step {which} has {len(found)} ({names}): name one")
    else:
        found = [c for c in checkpoints if c["path"] == which]
        if not found:
            raise InputError(
                f"--checkpoint: best, a step number or a checkpoint's name (got {which!r})"
            )
    if not found:
        raise InputError(f"--checkpoint: the job has no checkpoint {which}")
    if not found[0]["stored"]:
        raise InputError(f"--checkpoint: step {found[0]['step']}'s files were pruned by retention")
    return found[0]


def target(out: Path, name: str) -> Path:
    """Where a file of the checkpoint goes: inside OUT, whatever its name says."""
    path = (out / name).resolve()
    if not path.is_relative_to(out.resolve()):
        raise InputError(f"refusing a file name that leaves --out: {name!r}")
    return path


def download_checkpoint(client: Client, job_id: str, which: str, out: Path) -> dict[str, Any]:
    """Download a checkpoint's files into `out`; the checkpoint, with its `files`."""
    checkpoint = pick(client.checkpoints(job_id)["data"], which)
    files = client.checkpoint_files(job_id, checkpoint["id"])["data"]
    for entry in files:
        path = target(out, entry["name"])
        partial = path.with_name(path.name + ".part")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as sink:
                sha256 = client.download(entry["url"], sink)
        except OSError as e:
            raise InputError(f"--out: cannot write {path}: {e.strerror}") from None
        if sha256 != entry["sha256"] or partial.stat().st_size != entry["size"]:
            partial.unlink()
            raise InputError(f"{entry['name']}: the download does not match its manifest")
        partial.replace(path)
    return {**checkpoint, "files": files}
