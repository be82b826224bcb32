"""Fixtures every runtime test directory shares."""

import pytest

from tiny_models import tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()
