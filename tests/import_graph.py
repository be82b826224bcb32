"""What code imports: a package's import graph read from its source with ast (every `import` and
`from ... import`, those under `if TYPE_CHECKING:` and inside functions too, resolved to the
package's modules), and the modules a fresh interpreter holds after running a snippet."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path


def imported_after(code: str, watched: Sequence[str]) -> set[str]:
    """Which modules of `watched` a fresh interpreter has imported after running `code` (a name
    ending in "." stands for every module below it; `code` may end in SystemExit)."""
    probe = (
        "import sys\ntry:\n    exec(compile(CODE, '<probe>', 'exec'))\nexcept SystemExit:\n"
        "    pass\nfound = [m for m in sys.modules if any(m == w or w.endswith('.') and "
        "m.startswith(w) for w in WATCHED)]\nprint(' '.join(found), file=sys.stderr)"
    )
    run = subprocess.run(
        [sys.executable, "-c", f"CODE = {code!r}\nWATCHED = {tuple(watched)!r}\n{probe}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(run.stderr.splitlines()[-1].split())


def module_files(package: str) -> dict[str, Path]:
    """Every module of `package` (subpackages included), by dotted name."""
    spec = find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    root = Path(next(iter(spec.submodule_search_locations)))
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join([package, *parts])] = path
    return files


def imported_names(path: Path, module: str) -> set[str]:
    """Dotted names `module` imports: `a.b` for `import a.b`, `a.b` and `a.b.c` for
    `from a.b import c` (c may be a submodule), relative imports resolved."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (a package counts as its __init__)."""
    files = module_files(package)
    graph = {}
    for module, path in files.items():
        graph[module] = {n for n in imported_names(path, module) if n in files} - {module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path [a, b, ..., a], or None when it has none."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None
