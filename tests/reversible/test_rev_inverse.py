"""The inverse reconstructs the inputs: exactly in float64, with measured drift below."""

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from rev_helpers import mlp_stack, streams, transformer_stack  # noqa: E402

from tokenomy.reversible.coupling import AdditiveCoupling  # noqa: E402
from tokenomy.reversible.drift import drift_table  # noqa: E402

pytestmark = pytest.mark.torch


@settings(max_examples=25, deadline=None)
@given(depth=st.integers(1, 6), width=st.integers(1, 6), rows=st.integers(1, 4),
       seed=st.integers(0, 2**16), scale=st.floats(1e-3, 1e3))
def test_inverse_reconstructs_input_float64(depth, width, rows, seed, scale):
    stack = mlp_stack(depth, d=width, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    x1, x2 = (scale * torch.randn(rows, width, generator=gen, dtype=torch.float64)
              for _ in range(2))
    with torch.no_grad():
        r1, r2 = stack.inverse(*stack(x1, x2))
    tol = 1e-12 * max(x1.abs().max().item(), x2.abs().max().item())
    assert (r1 - x1).abs().max().item() <= tol
    assert (r2 - x2).abs().max().item() <= tol


def test_transformer_stack_inverse_float64_depth_32():
    stack = transformer_stack(depth=32).eval()
    x1, x2 = streams(requires_grad=False)
    with torch.no_grad():
        r1, r2 = stack.inverse(*stack(x1, x2))
    assert torch.allclose(r1, x1, rtol=0, atol=1e-12)
    assert torch.allclose(r2, x2, rtol=0, atol=1e-12)


def test_single_block_forward_inverse_formulas():
    f, g = torch.nn.Linear(3, 3).double(), torch.nn.Linear(3, 3).double()
    block = AdditiveCoupling(f, g)
    x1, x2 = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    with torch.no_grad():
        y1, y2 = block(x1, x2)
        assert torch.equal(y1, x1 + f(x2))
        assert torch.equal(y2, x2 + g(x1 + f(x2)))
        assert torch.equal(block.inverse(y1, y2)[1], y2 - g(y1))


def test_drift_vs_depth_float32_bfloat16():
    """Drift grows with depth and with the unit roundoff; the numbers go to docs/reversible.md."""
    table = drift_table(depths=(1, 8, 32))
    print("\ninverse drift max|x - R^-1(R(x))| / max|x|:", table)
    f64, f32, bf16 = table["float64"], table["float32"], table["bfloat16"]
    assert max(f64.values()) < 1e-12
    assert max(f32.values()) < 1e-4  # ~ L x 2^-24 x |F|/|x|
    assert all(f32[L] > f64[L] for L in (1, 8, 32))
    assert all(bf16[L] > f32[L] for L in (1, 8, 32))  # 2^-8 vs 2^-24 roundoff
    assert bf16[32] > bf16[1]  # rounding error accumulates with depth
    assert bf16[32] < 1.0  # still a reconstruction, not noise

