"""Regenerate openai-subset.json, the part of OpenAI's published OpenAPI description
(github.com/openai/openai-openapi, openapi.yaml) that the tests validate our responses against:
the responses of the operations below and every component they reference, transitively. The
tests never download; run this by hand when the spec moves, from a checkout of that repository:

    python tests/platform/finetune/openapi/extract.py OPENAPI_REPO_CHECKOUT

The source commit is recorded in the subset (`info.x-source`), so a diff shows what moved.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).with_name("openai-subset.json")
REPO = "openai/openai-openapi"
OPERATIONS = {  # path: methods (OpenAI's paths, below /v1)
    "/files": ("get", "post"),
    "/files/{file_id}": ("get", "delete"),
    "/models": ("get",),
    "/models/{model}": ("get", "delete"),
    "/chat/completions": ("post",),
    "/fine_tuning/alpha/graders/run": ("post",),
    "/fine_tuning/alpha/graders/validate": ("post",),
    "/fine_tuning/jobs": ("get", "post"),
    "/fine_tuning/jobs/{fine_tuning_job_id}": ("get",),
    "/fine_tuning/jobs/{fine_tuning_job_id}/cancel": ("post",),
    "/fine_tuning/jobs/{fine_tuning_job_id}/pause": ("post",),
    "/fine_tuning/jobs/{fine_tuning_job_id}/resume": ("post",),
    "/fine_tuning/jobs/{fine_tuning_job_id}/events": ("get",),
    "/fine_tuning/jobs/{fine_tuning_job_id}/checkpoints": ("get",),
}


def refs(node: Any) -> set[str]:
    """Every local `$ref` under a node."""
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node))
    return set()


def closure(spec: dict[str, Any], roots: set[str]) -> dict[str, dict[str, Any]]:
    """The components (`#/components/KIND/NAME`) reachable from `roots`, by kind."""
    kept: dict[str, dict[str, Any]] = {}
    todo, seen = list(roots), set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, components, kind, name = ref.split("/")
        assert components == "components", f"not a component: {ref}"
        node = spec["components"][kind][name]
        kept.setdefault(kind, {})[name] = node
        todo += refs(node)
    return {kind: dict(sorted(named.items())) for kind, named in sorted(kept.items())}


def subset(spec: dict[str, Any], source: dict[str, str]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for path, methods in OPERATIONS.items():
        for method in methods:
            op = spec["paths"][path][method]
            kept = {"operationId": op["operationId"], "responses": op["responses"]}
            paths.setdefault(path, {})[method] = kept
    return {
        "openapi": spec["openapi"],
        "info": {
            "title": spec["info"]["title"],
            "version": spec["info"]["version"],
            "x-source": source,
        },
        "paths": paths,
        "components": closure(spec, refs(paths)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help=f"a git checkout (or bare clone) of {REPO}")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args()
    git = ["git", "-C", str(args.checkout)]
    commit = subprocess.run(
        [*git, "rev-parse", args.commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    text = subprocess.run(
        [*git, "show", f"{commit}:openapi.yaml"], check=True, capture_output=True, text=True
    ).stdout
    source = {"repository": f"https://github.com/{REPO}", "commit": commit, "file": "openapi.yaml"}
    OUT.write_text(json.dumps(subset(yaml.safe_load(text), source), indent=1) + "\n")
    print(f"{OUT}: {commit}")


if __name__ == "__main__":
    main()
