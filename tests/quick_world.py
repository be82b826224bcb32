"""The lab's quick world, built once per test run and copied to every test that starts from it.

The lab's quick experiment and the demo both start from `quick_config().world`, and building it
is the suite's longest single step. `build_world` is deterministic: the demo's world (built in its
own process, on two threads) and the lab test's (one thread) were byte-identical in the same run
(sha256 of the SFT policy's and the reward model's weights), so one build under a file lock in the
run's shared temporary directory (the parent of every xdist worker's) serves them all. A test
gets its own copy, which `build_world` reuses by its manifest.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

from rlguard.lab.experiment import quick_config
from rlguard.lab.world import build_world


def quick_world_copy(tmp_path_factory: pytest.TempPathFactory, dest: Path) -> Path:
    """A copy of the run's quick world at `dest` (built by whichever test asks first)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    with FileLock(shared / "quick-world.lock"):
        world = build_world(shared / "quick-world", quick_config().world)
    shutil.copytree(world.root, dest)
    return dest
