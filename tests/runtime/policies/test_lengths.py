"""The per-prompt EWMA length predictor, against hand-computed values and as a property."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlguard.runtime.policies.lengths import LengthPredictor


def test_before_any_data_every_prompt_gets_the_default() -> None:
    p = LengthPredictor(default=300.0)
    assert p.predict(["a", "b"]).tolist() == [300.0, 300.0]


def test_ewma_by_hand() -> None:
    p = LengthPredictor(alpha=0.5)
    p.update("a", [100, 200])  # first observation: its mean, 150
    assert p.predict(["a"])[0] == 150.0
    p.update("a", [50])  # 0.5 * 50 + 0.5 * 150
    assert p.predict(["a"])[0] == 100.0
    p = LengthPredictor(alpha=0.25)
    p.update("a", [400])
    p.update("a", [0])  # 0.25 * 0 + 0.75 * 400
    assert p.predict(["a"])[0] == 300.0


def test_unseen_prompt_gets_the_mean_of_the_known_predictions() -> None:
    p = LengthPredictor(alpha=0.5, default=999.0)
    p.update("a", [100])
    p.update("b", [300])
    p.update("b", [100])  # b -> 200
    assert p.predict(["new"])[0] == pytest.approx(150.0)
    assert p.predict(["a", "new", "b"]).tolist() == pytest.approx([100.0, 150.0, 200.0])


@pytest.mark.parametrize("alpha", [0.0, -0.1, 1.5])
def test_alpha_outside_unit_interval_is_refused(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        LengthPredictor(alpha=alpha)


def test_no_lengths_is_refused() -> None:
    with pytest.raises(ValueError, match="no lengths"):
        LengthPredictor().update("a", [])


@given(
    st.lists(st.lists(st.integers(1, 2048), min_size=1, max_size=5), min_size=1, max_size=12),
    st.floats(0.05, 1.0),
)
def test_prediction_stays_within_the_observed_means(batches, alpha) -> None:
    p = LengthPredictor(alpha=alpha)
    for lengths in batches:
        p.update("k", lengths)
    means = [np.mean(b) for b in batches]
    assert min(means) - 1e-9 <= p.predict(["k"])[0] <= max(means) + 1e-9
    if alpha == 1.0:
        assert p.predict(["k"])[0] == pytest.approx(means[-1])
