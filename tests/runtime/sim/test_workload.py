"""The synthetic workload: reproducible, capped, long-tailed, correlated within prompts, and
persistent enough across epochs that the EWMA predictor learns something."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.runtime.policies.lengths import LengthPredictor
from rlguard.runtime.sim.workload import LengthModel, PromptPool


def test_same_seed_same_batch_other_seed_other_batch() -> None:
    a = PromptPool(LengthModel(), 3).batch(1, 2, 64, 5)
    b = PromptPool(LengthModel(), 3).batch(1, 2, 64, 5)
    c = PromptPool(LengthModel(), 4).batch(1, 2, 64, 5)
    assert a.keys == b.keys and (a.lengths == b.lengths).all()
    assert a.keys != c.keys


def test_lengths_are_capped_long_tailed_and_hit_the_cap_at_the_set_rate() -> None:
    model = LengthModel(capped_fraction=0.02, max_response=1000, response_median=200)
    pool = PromptPool(model, 0)
    lengths = np.concatenate([pool.batch(0, s, 1024, 8).lengths.ravel() for s in range(7)])
    assert lengths.min() >= 1 and lengths.max() == 1000
    assert np.median(lengths) == pytest.approx(200, rel=0.1)
    assert (lengths == 1000).mean() == pytest.approx(0.02, abs=0.008)
    assert lengths.mean() > np.median(lengths)  # right-skewed


def test_samples_of_a_prompt_are_correlated_as_configured() -> None:
    for share in (0.0, 0.6):
        pool = PromptPool(LengthModel(prompt_share=share, capped_fraction=0.001), 1)
        logs = np.log(pool.batch(0, 0, 4096, 2).lengths)
        r = np.corrcoef(logs[:, 0], logs[:, 1])[0, 1]
        assert r == pytest.approx(share, abs=0.07)


def test_the_ewma_predicts_next_epochs_group_means_better_than_the_fallback() -> None:
    model = LengthModel(dataset_prompts=512)
    pool = PromptPool(model, 2)
    predictor = LengthPredictor()
    for epoch in range(2):
        b = pool.batch(epoch, 0, 512, 5)
        for key, row in zip(b.keys, b.lengths, strict=True):
            predictor.update(key, row)
    nxt = pool.batch(2, 0, 512, 5)
    truth = nxt.lengths.mean(axis=1)
    error = np.abs(predictor.predict(nxt.keys) - truth).mean()
    fallback_error = np.abs(predictor.fallback() - truth).mean()
    assert error < 0.8 * fallback_error


def test_prompts_respect_the_prompt_cap() -> None:
    pool = PromptPool(LengthModel(prompt_median=900, prompt_sigma=1.0, max_prompt=1024), 0)
    assert pool.prompt_tokens.max() <= 1024 - 30
