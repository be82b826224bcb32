"""Every run's Ray worker imports the run's actor (executor.py): what that module imports, every
run pays for in memory and start-up on its node. It imports nothing of the server's: no store, no
web framework, no API schemas, no quote model (which alone cost a run 1.5 CPU-seconds and 70 MB:
benchmarks/bench_platform_load.py)."""

from __future__ import annotations

import subprocess
import sys

SERVER_SIDE = ("sqlalchemy", "alembic", "fastapi", "starlette", "uvicorn", "scipy", "numpy")
SERVER_MODULES = (
    "rlguard.platform.schemas",
    "rlguard.platform.db",
    "rlguard.platform.service",
    "rlguard.runtime.calib.quote",
)


def test_the_runs_actor_imports_nothing_of_the_servers():
    listed = "import sys, rlguard.platform.executor; print(' '.join(sys.modules))"
    run = subprocess.run([sys.executable, "-c", listed], capture_output=True, text=True, check=True)
    modules = run.stdout.split()
    assert "rlguard.platform.executor" in modules
    server_side = [m for m in modules if m.split(".")[0] in SERVER_SIDE or m in SERVER_MODULES]
    assert server_side == []
