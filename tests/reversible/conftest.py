"""Reversible tests: one intra-op thread per test process.

The suite runs under ``pytest -n 2`` on two cores; two torch threads per worker would
oversubscribe the cores and make OpenMP spin-waits dominate tiny CPU kernels.
"""

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread():
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
