"""Fixtures for the whole suite."""

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models gain nothing from threads and slow down a lot on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def pytest_collection_modifyitems(config, items):
    """The `slow` tests first (each a module that trains or serves for minutes): `make test`
    hands whole files to its workers in this order, and the longest started last would end last.
    Tests marked `cuda` (`pytest -m cuda` runs them alone) skip where no GPU is."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: files stay whole
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("cuda"):
            item.add_marker(skip)
