"""What a watch that has read no eval says: where it looked and what it found there.

A wrong `path` and a wrong `eval_tag` look the same from the platform (no evals, no decisions),
so the warning tells them apart: the files the watch found and the tags in them (with the closest
to the eval tag), or that it matched no file, where, and a path one directory off that does.
`no_eval_yet` comes while the run goes on, `no_eval` when it has ended; each once per job (the
platform drops a later attempt's).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from rlguard.platform.watchers.files import near
from rlguard.platform.watchers.points import WatchWarning
from rlguard.platform.watchers.spec import WatchSpec

NO_EVAL_YET, NO_EVAL = "no_eval_yet", "no_eval"
ONCE_PER_JOB = (NO_EVAL_YET, NO_EVAL)
SHOWN = 5  # files and tags a message names; its data lists more
DATA_BYTES = 3000  # a warning's data as JSON: the platform stores at most 4 KiB per record
NAME_CHARS = 200  # a listed file or tag (a job's own names: any length)


def listed(names: list[str], shown: int = SHOWN) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def bounded(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its lists halved until it fits DATA_BYTES as JSON."""
    data = {k: [n[:NAME_CHARS] for n in v] if isinstance(v, list) else v for k, v in data.items()}
    while len(json.dumps(data).encode()) > DATA_BYTES and any(
        isinstance(v, list) and v for v in data.values()
    ):
        data = {k: v[: len(v) // 2] if isinstance(v, list) else v for k, v in data.items()}
    return data


def found(spec: WatchSpec, job_dir: Path, files: list[str], tags: list[str]) -> tuple[str, dict]:
    """A sentence on what the watch found (`files`, job-relative, and the `tags` read in them),
    and the same as data."""
    data: dict[str, Any] = {"tag": spec.eval_tag, "source": spec.source, "path": spec.path}
    data |= {"job_dir": str(job_dir), "files": files, "files_count": len(files)}
    data |= {"seen": tags, "seen_count": len(tags)}
    if spec.path is None:  # stdout without a path: the run's own output, always there
        where = "the run's output"
    else:
        where = f"{spec.source} {spec.path!r} under {job_dir}"
        if not files:
            alt = near(job_dir, spec.path)
            data["matches_instead"] = alt
            hint = f"; {alt!r} does match (set path, and checkpoints, to it)" if alt else ""
            what = "no event file" if spec.source == "tensorboard" else "no file"
            return f"{where} matched {what}{hint}", data
        where += f": found {listed(files)}"
    if not tags:
        nothing = f"no line matched regex {spec.regex!r}" if spec.regex else "no tags in them"
        return f"{where}; {nothing}", data
    text = f"{where}; tags seen: {listed(tags, 20)}"
    close = difflib.get_close_matches(spec.eval_tag, tags, n=3, cutoff=0.5)
    if close:
        text += f"; did you mean {' or '.join(close)}?"
    return text, data


def warning(
    code: str, spec: WatchSpec, job_dir: Path, reader: Any, waited: float, polls: int
) -> WatchWarning:
    """`code`'s warning, from what `reader` (any of the source readers) has read so far."""
    said = "yet" if code == NO_EVAL_YET else "by the run's end"
    files, tags = sorted(reader.files_found), sorted(reader.seen_tags)
    text, data = found(spec, job_dir, files, tags)
    message = (
        f"no eval for tag {spec.eval_tag!r} {said}, after {waited:.0f} s ({polls} polls): {text}"
    )
    data |= {"polls": polls, "seconds": round(waited, 1)}
    return WatchWarning(code, message, bounded(data))
