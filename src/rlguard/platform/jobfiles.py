"""A job's files on the node that runs it: its output directory and a train job's config.

Node side: the run's actor (executor.py) imports this, so it imports nothing of the server's (no
store, no API schemas, no quote model), each of which costs every run's Ray worker memory and
start-up time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rlguard.io import write_text

OUTPUT = "output"


def write_config(path: Path, config: dict[str, Any], job_dir: Path) -> None:
    """A train job's config on the node that runs it, its `output_dir` in the job's directory
    there (each node may keep jobs under a root of its own: jobhome.py). The platform's file,
    outside the job's directory, so the job cannot swap it for a link root follows."""
    written = {**config, "output_dir": str(job_dir / OUTPUT)}
    write_text(path, yaml.safe_dump(written, sort_keys=False))
