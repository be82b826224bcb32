#!/usr/bin/env bash
# Every CUDA check in one run, for a lent GPU machine (no network, a short lease):
#   1. the suite's CUDA-marked tests (`pytest -m cuda`: a step on the GPU for each optimizer,
#      bf16/fp16 autocast, FSDP in one launched process resuming bit for bit);
#   2. one CGPO (CRPG) step, one GRPO step of ours and one TRL GRPOTrainer step on the same
#      batch and Qwen2-0.5B-shaped model, bf16, interleaved, with one profiled step of each;
#   3. the rollout engine's generation profile (batch x context grid) on this GPU.
# Results go to $OUT (the device tool's folder) or benchmarks/results/cuda.
# Python packages the machine lacks travel as wheels in .whl/ (see docs/train.md).
#
#   bash benchmarks/cuda_checks.sh [steps] [max-new-tokens]     (CHECKS="tests train profile")
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-benchmarks/results/cuda}
steps=${1:-5}
tokens=${2:-128}
checks=${CHECKS:-tests train profile}
mkdir -p "$out"
site=/tmp/site
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl || exit 1
fi
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/benchmarks:$site PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.csv"
python3 -c "import torch, transformers, trl; print(torch.__version__, torch.version.cuda,
  transformers.__version__, trl.__version__)" | tee "$out/versions.txt"

status=0
if [[ $checks == *tests* ]]; then
  timeout 180 python3 -m pytest -m cuda -q -rs -p no:cacheprovider tests/train \
    --junitxml="$out/cuda_tests.xml" >"$out/cuda_tests.log" 2>&1 || status=1
  tail -5 "$out/cuda_tests.log"
fi
if [[ $checks == *train* ]]; then
  timeout 330 python3 benchmarks/bench_train.py --device cuda --bf16 --arch qwen2-0.5b \
    --batch 8 --k 8 --max-new-tokens "$tokens" --steps "$steps" --warmup 1 --threads 8 \
    --profile --out "$out/train_cuda.json" >"$out/train_cuda.log" 2>&1 || status=1
  grep -a "step\|Error\|error" "$out/train_cuda.log" | tail -40
fi
if [[ $checks == *profile* ]]; then
  timeout 150 python3 benchmarks/bench_profile.py --device cuda --max-batch 256 \
    --grid "$out/profile_grid.json" --out "$out/profile.yaml" >"$out/profile.log" 2>&1 || status=1
  grep -a "Error\|error" "$out/profile.log" | tail -20
fi
python3 - "$out" <<'EOF'
"""The CUDA tests' JUnit XML as JSON, and the training benchmark's summary on stdout."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

out = Path(sys.argv[1])
if (out / "cuda_tests.xml").exists():
    suite = ET.parse(out / "cuda_tests.xml").getroot().find("testsuite")
    outcomes = ("failure", "error", "skipped")
    cases = [
        {
            "test": f"{c.get('classname').replace('.', '/')}.py::{c.get('name')}",
            "seconds": float(c.get("time")),
            "outcome": next((k for k in outcomes if c.find(k) is not None), "passed"),
        }
        for c in suite.findall("testcase")
    ]
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    summary = {"command": "pytest -m cuda tests/train", **counts, "wall_s": float(suite.get("time"))}
    (out / "cuda_tests.json").write_text(json.dumps({**summary, "cases": cases}, indent=2))
    print(summary)
if (out / "train_cuda.json").exists():
    for name, run in json.loads((out / "train_cuda.json").read_text())["runs"].items():
        print(name, {k: v for k, v in run.items() if k not in ("profiled_step_top_ops", "step_s_all")})
EOF
exit $status
