import pytest

from tiny_models import tiny_causal_lm


@pytest.fixture(scope="module")
def model(tokenizer):
    return tiny_causal_lm(tokenizer, seed=0, hidden_size=64)
