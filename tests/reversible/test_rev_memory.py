"""Saved-activation bytes are constant in depth (saved-tensor hooks and profiler trace)."""

import pytest

torch = pytest.importorskip("torch")

from rev_helpers import loss_of, transformer_stack  # noqa: E402

from tokenomy.reversible.measure import (  # noqa: E402
    SavedTensorBytes,
    peak_allocated_bytes,
    peak_from_events,
)

pytestmark = pytest.mark.torch

DEPTHS = (2, 8, 32)
SHAPE = (2, 64, 32)  # B, T, D: one stream is 16 KiB in float32


def _inputs():
    gen = torch.Generator().manual_seed(0)
    return tuple(torch.randn(SHAPE, generator=gen).requires_grad_(True) for _ in range(2))


def _saved_bytes(depth: int, reversible: bool, dropout: float = 0.0,
                 store_last: bool = True) -> int:
    stack = transformer_stack(depth, d=SHAPE[2], heads=2, dropout=dropout, dtype=torch.float32)
    stack.store_last = store_last
    x1, x2 = _inputs()
    with SavedTensorBytes(exclude=list(stack.parameters())) as saved:
        y = stack(x1, x2, reversible=reversible)
    del y
    return saved.nbytes


def _peak_bytes(depth: int, reversible: bool, dropout: float = 0.0) -> int:
    stack = transformer_stack(depth, d=SHAPE[2], heads=2, dropout=dropout, dtype=torch.float32)
    x1, x2 = _inputs()
    for p in stack.parameters():  # parameter gradients pre-allocated, as in the benchmark
        p.grad = torch.zeros_like(p)

    def step():
        loss_of(*stack(x1, x2, reversible=reversible)).backward()

    step()
    return peak_allocated_bytes(step)


def test_saved_tensor_bytes_constant_in_depth():
    rev = [_saved_bytes(L, True) for L in DEPTHS]
    rev_all = [_saved_bytes(L, True, store_last=False) for L in DEPTHS]
    std = [_saved_bytes(L, False) for L in DEPTHS]
    stream_bytes = SHAPE[0] * SHAPE[1] * SHAPE[2] * 4
    per_block = (std[2] - std[1]) / (DEPTHS[2] - DEPTHS[1])
    assert per_block > 10 * stream_bytes  # the twin stores every block's activations
    # every block reversible: only the two final output streams are saved
    assert rev_all == [2 * stream_bytes] * len(DEPTHS)
    # final block stored: its own activations plus at most its input and output streams
    assert rev == [rev[0]] * len(DEPTHS)
    assert per_block <= rev[0] <= per_block + 2 * stream_bytes


def test_profiler_peak_constant_in_depth():
    rev = [_peak_bytes(L, True) for L in DEPTHS]
    std = [_peak_bytes(L, False) for L in DEPTHS]
    assert max(rev) - min(rev) < 1024, rev  # flat to within a kibibyte over 2..32 blocks
    slope_std = (std[2] - std[0]) / (DEPTHS[2] - DEPTHS[0])
    assert slope_std > 8 * SHAPE[0] * SHAPE[1] * SHAPE[2] * 4  # ~16 stream-sized tensors
    assert rev[2] < std[2] / 5


def test_dropout_costs_only_the_rng_states():
    """With randomness, each block keeps two CPU generator states (5056 B each), no activations."""
    rev = [_peak_bytes(L, True, dropout=0.1) for L in (2, 16)]
    per_block = (rev[1] - rev[0]) / (16 - 2)
    rng_bytes = torch.get_rng_state().numel()
    assert per_block <= 2 * rng_bytes + 512, (per_block, rng_bytes)
    assert _saved_bytes(16, True, dropout=0.1) == _saved_bytes(2, True, dropout=0.1)


def test_peak_from_events_running_sum():
    events = [(0, 100), (1, 50), (2, -100), (3, 200), (4, -250)]
    assert peak_from_events(events) == 250
    assert peak_from_events([(0, -10), (1, 5)]) == 0
