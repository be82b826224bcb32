"""Run the Tiresias simulator (SymbioticLab/Tiresias, simulator/) from a checkout the user fetched.

Nothing of Tiresias is part of rlguard: this copies the checkout's `simulator/` into a temporary
folder and runs it there, so the checkout stays untouched. The simulator is Python 2.7 code
(its README says `python2.7 run_sim.py`). It runs on a Python 2 interpreter when one is found;
otherwise on Python 3 after an automatic shim applied to the temporary copy only:

- `sys.maxint` (gone in Python 3) reads `sys.maxsize` (the same 2**63 - 1 on 64-bit builds);
- in the modules without `from __future__ import division` (run_sim.py, util.py, lp.py), every
  `a / b` becomes Python 2's classic division: floor division when both are integers, true
  division otherwise. run_sim.py relies on it: its next-demotion time divides two integers.

Both are syntax-tree rewrites (`ast`), not text edits. The simulator imports numpy without using
it (only in a string); the launcher stubs the module when the interpreter has none.

Two optional patches, to explain differences rather than hide them: `fix_jump` fixes the demotion
wake-up bug described in `JUMP_BUG`; `queue_limits` replaces the hard-coded thresholds
(`QUEUE_LIMITS`), e.g. with limits every job's GPU count divides, so that demotions fall on whole
seconds as the simulator's integer clock requires.
"""

from __future__ import annotations

import ast
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = """\
import runpy, sys, types
try:
    import numpy  # noqa: F401 -- imported by jobs.py, never used
except ImportError:
    sys.modules["numpy"] = types.ModuleType("numpy")
sys.path.insert(0, sys.argv[1])
sys.argv = [sys.argv[1] + "/run_sim.py"] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

JUMP_BUG = (
    "int(math.ceil((JOBS.queue_limit[qid] - rjob['executed_time'])/rjob['num_gpu']) + event_time)"
)
"""dlas_sim_jobs's next-demotion time subtracts executed seconds from a GPU-second limit before
dividing by the GPUs: (limit - t) / g instead of limit / g - t. For a job with g > 1 GPUs that has
already run t > 0 seconds it lies t (1 - 1/g) seconds after the crossing, so the demotion waits
for that wake-up or the next arrival or completion."""

JUMP_FIX = (
    "int(math.ceil((JOBS.queue_limit[qid] - rjob['executed_time'] * rjob['num_gpu'])"
    " / float(rjob['num_gpu'])) + event_time)"
)
"""The first whole second at or after the crossing (float() keeps the division true in 2.7)."""

QUEUE_LIMITS = "self.queue_limit = [3250, 7200, 18000]"
"""jobs.py's thresholds in GPU-seconds; with its `num_queue = 3` only the first two are used."""


@dataclass(frozen=True)
class Interpreter:
    path: str
    major: int


def find_interpreter(explicit: str | None = None) -> Interpreter:
    """The given interpreter, else a Python 2.7 on PATH or under pyenv, else this Python 3."""
    candidates = [explicit] if explicit else ["python2.7", "python2"]
    if not explicit:
        pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
        candidates += sorted(str(p) for p in pyenv.glob("2.7*/bin/python2.7"))
    for name in candidates:
        path = shutil.which(name)
        if path is None:
            continue
        probe = subprocess.run(
            [path, "-c", "import sys; print(sys.version_info[0])"], capture_output=True, text=True
        )
        if probe.returncode == 0:
            return Interpreter(path, int(probe.stdout.strip()))
    if explicit:
        raise SystemExit(f"error: --python {explicit}: not a working interpreter")
    return Interpreter(sys.executable, 3)


class _Py2Semantics(ast.NodeTransformer):
    """Python 2 meanings in Python 3 syntax: classic division and sys.maxint."""

    def __init__(self, classic_division: bool) -> None:
        self.classic_division = classic_division

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if self.classic_division and isinstance(node.op, ast.Div):
            call = ast.Call(ast.Name("_py2_div", ast.Load()), [node.left, node.right], [])
            return ast.copy_location(call, node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        if self.classic_division and isinstance(node.op, ast.Div):
            load = ast.parse(ast.unparse(node.target), mode="eval").body
            value = ast.Call(ast.Name("_py2_div", ast.Load()), [load, node.value], [])
            return ast.copy_location(ast.Assign([node.target], value), node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "sys" and node.attr == "maxint":
            node.attr = "maxsize"
        return node


PY2_DIV = (
    "def _py2_div(a, b):\n"
    "    return a // b if isinstance(a, int) and isinstance(b, int) else a / b\n"
)


def shim_for_python3(source: str) -> str:
    """The module's source with Python 2 semantics kept under Python 3 (see module docstring)."""
    tree = ast.parse(source)
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    classic = not any(alias.name == "division" for n in future for alias in n.names)
    tree = _Py2Semantics(classic).visit(tree)
    if classic:
        at = max((tree.body.index(n) + 1 for n in future), default=0)
        tree.body[at:at] = ast.parse(PY2_DIV).body
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _patch(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"error: {path.name}: expected line not found (another version?): {old}")
    path.write_text(text.replace(old, new))


def prepare(
    checkout: Path,
    workdir: Path,
    interpreter: Interpreter,
    fix_jump: bool = False,
    queue_limits: tuple[int, int, int] | None = None,
) -> Path:
    """A runnable copy of `checkout/simulator` under `workdir`, patched as asked; returns it."""
    source = checkout / "simulator"
    if not (source / "run_sim.py").is_file():
        raise SystemExit(f"error: {checkout}: no simulator/run_sim.py (a Tiresias checkout?)")
    copy = Path(tempfile.mkdtemp(prefix="simulator-", dir=workdir))
    shutil.copytree(source, copy, dirs_exist_ok=True)
    if fix_jump:
        _patch(copy / "run_sim.py", JUMP_BUG, JUMP_FIX)
    if queue_limits:
        _patch(copy / "jobs.py", QUEUE_LIMITS, f"self.queue_limit = {list(queue_limits)}")
    if interpreter.major == 3:
        for module in copy.glob("*.py"):
            module.write_text(shim_for_python3(module.read_text()))
    (copy / "launch_rlguard.py").write_text(LAUNCHER)
    return copy


@dataclass(frozen=True)
class RefRun:
    jct_s: dict[str, float]  # job_id -> completion time - submit time
    preemptions: int
    demotions: int  # counted from the simulator's own "job N demote to QK" lines


def run(
    copy: Path,
    interpreter: Interpreter,
    trace: Path,
    schedule: str,
    gpus: int,
    node_gpus: int = 8,
    scheme: str = "count",
) -> RefRun:
    """One simulation: `schedule` (fifo, fjf, dlas-gpu, dlas-gpu-8, ...) on `gpus` GPUs in nodes
    of `node_gpus`, placement `scheme`; the jobs as its job.csv reports them."""
    with tempfile.TemporaryDirectory(dir=copy.parent) as tmp:
        spec = Path(tmp) / "cluster.csv"
        nodes = max(gpus // node_gpus, 1)
        spec.write_text(
            "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
            f"1,{nodes},{min(node_gpus, gpus)},64,256\n"
        )
        log = Path(tmp) / "log"
        command = [
            interpreter.path,
            str(copy / "launch_rlguard.py"),
            str(copy),
            f"--cluster_spec={spec}",
            f"--scheme={scheme}",
            f"--trace_file={trace.resolve()}",
            f"--schedule={schedule}",
            f"--log_path={log}",
        ]
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"error: Tiresias {schedule} failed:\n{done.stderr[-2000:]}")
        with open(log / "job.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    return RefRun(
        {r["job_id"]: float(r["JCT"]) for r in rows},
        sum(int(r["preempt"]) for r in rows),
        len(re.findall(r"^job \d+ demote to Q\d+$", done.stdout, flags=re.MULTILINE)),
    )
