"""Passes timed on a GPU's kernels: extrapolated to the model's depth, only the compute-bound ones
kept, and fitted beside the verl runs as the compute terms' anchor."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.runtime.calib.coefficients import PFLOP, train_flops_per_token
from rlguard.runtime.calib.fit import features, fit
from rlguard.runtime.calib.kernels import (
    KernelCell,
    kernel_passes,
    read_kernel_cells,
)
from rlguard.runtime.sim.hardware import H100, QWEN2_7B
from synthetic_steps import TRUTH, synthetic_rows

SHAPES = [(1, 256), (4, 256), (1, 1024), (4, 2048), (16, 1024)]


def _cells(mode: str, fixed: float, per_token_layer: float, floor: float) -> list[KernelCell]:
    """A layer takes the longer of the host's launch floor and its compute."""
    return [
        KernelCell(
            source="synthetic",
            gpu="h100",
            model="qwen2-7b",
            layers=layers,
            mode=mode,
            micro_batch=micro,
            seq=seq,
            seconds=fixed + layers * max(floor, per_token_layer * micro * seq),
        )
        for layers in (2, 6)
        for micro, seq in SHAPES
    ]


def test_compute_bound_passes_are_extrapolated_to_the_model_depth() -> None:
    passes = kernel_passes(_cells("score", fixed=0.04, per_token_layer=1e-6, floor=1e-3))
    assert sorted(p.tokens for p in passes) == [8192, 16384]  # the rest sit near the floor
    big = max(passes, key=lambda p: p.tokens)
    assert big.seconds == pytest.approx(0.04 + QWEN2_7B.layers * 16384e-6)
    assert big.at_peak_s == pytest.approx(16384 * 2 * QWEN2_7B.params / H100.bf16_flops)
    assert big.pflops == pytest.approx(16384 * 2 * QWEN2_7B.params / PFLOP)


def test_a_model_its_host_cannot_feed_gives_no_pass() -> None:
    # the launch floor exceeds the compute of every micro-batch: nothing measures the GPU
    assert kernel_passes(_cells("train", fixed=0.05, per_token_layer=1e-7, floor=4e-3)) == []


def test_recompute_counts_a_second_forward() -> None:
    gc = kernel_passes(_cells("train_gc", fixed=0.1, per_token_layer=3e-6, floor=4e-3))
    tokens = max(p.tokens for p in gc)
    big = next(p for p in gc if p.tokens == tokens)
    flops = tokens * train_flops_per_token(QWEN2_7B, lora=False, recompute=True)
    assert big.pflops == pytest.approx(flops / PFLOP) and big.phase == "training"


def _timed_at(coefs_forward: float, per_pflop: float) -> list[KernelCell]:
    """Scoring passes whose time is exactly the compute terms at these coefficients."""
    per_token_layer = (
        (coefs_forward / H100.bf16_flops + per_pflop / PFLOP)
        * 2
        * (QWEN2_7B.params / QWEN2_7B.layers)
    )
    return _cells("score", fixed=0.0, per_token_layer=per_token_layer, floor=1e-4)


def test_kernel_passes_consistent_with_the_runs_leave_the_fit_unchanged() -> None:
    feats = features(synthetic_rows(TRUTH))
    passes = kernel_passes(_timed_at(TRUTH.forward, TRUTH.forward_s_per_pflop))
    assert passes
    fitted = fit(feats, passes)
    assert fitted.forward == pytest.approx(TRUTH.forward, rel=1e-6)
    assert fitted.forward_s_per_pflop == pytest.approx(TRUTH.forward_s_per_pflop, rel=1e-6)


def test_slower_kernels_pull_the_compute_terms_the_runs_alone_set() -> None:
    feats = features(synthetic_rows(TRUTH))
    slower = kernel_passes(_timed_at(2 * TRUTH.forward, 2 * TRUTH.forward_s_per_pflop))
    alone, anchored = fit(feats, []), fit(feats, slower)
    assert anchored.forward_s_per_pflop > 1.05 * alone.forward_s_per_pflop
    assert anchored.train == pytest.approx(alone.train)  # scoring passes: training untouched


def test_the_shipped_h100_passes_are_the_big_models_compute_bound_ones() -> None:
    cells = read_kernel_cells()
    passes = kernel_passes(cells)
    assert {c.model for c in cells} == {"qwen2.5-0.5b", "qwen2.5-3b", "qwen2-7b", "qwen2.5-32b"}
    assert {p.model for p in passes} == {"qwen2-7b", "qwen2.5-32b"}  # the small: launch-bound
    assert {p.mode for p in passes} == {"score", "train", "train_gc"}
    assert all(0.3 < p.at_peak_s / p.seconds < 0.8 for p in passes)  # MFU of a real H100


def test_a_bad_cell_names_the_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "cells.csv"
    bad.write_text(
        "source,gpu,model,layers,mode,micro_batch,seq,seconds\n"
        "x,h100,qwen2-7b,2,backward,1,256,0.01\n"
    )
    with pytest.raises(InputError, match=r"cells.csv:2: field 'mode'.*'backward'"):
        read_kernel_cells(bad)
