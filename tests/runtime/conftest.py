"""Fixtures every runtime test directory shares."""

import pytest
import torch

from tiny_models import tiny_tokenizer


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models gain nothing from threads and slow down a lot on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()
