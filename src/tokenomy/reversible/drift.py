"""Reconstruction drift of a reversible stack: how far inverse(forward(x)) lands from x.

    drift(L, dtype) = max |x - R^-1(R(x))| / max |x|      over both streams

In exact arithmetic the drift is 0. In floating point each block adds one rounding of
x1 + F(x2) (and of x2 + G(y1)), which the subtraction cannot undo, so the drift is of
order u * L * |F| / |x| with u the unit roundoff (2^-53, 2^-24, 2^-8 for float64,
float32, bfloat16) -- growing with depth, and amplified where F and G are steep
(Behrmann et al. 2021, "Understanding and mitigating
exploding inverses in invertible neural networks").
"""

from __future__ import annotations

import torch

from tokenomy.reversible.stack import ReversibleSequence
from tokenomy.reversible.transformer import ReversibleTransformerBlock


def transformer_stack(depth: int, d_stream: int = 64, n_heads: int = 4,
                      dtype: torch.dtype = torch.float32, seed: int = 0) -> ReversibleSequence:
    """Reversible transformer stack with default (PyTorch) initialisation, in eval mode."""
    gen_state = torch.get_rng_state()
    torch.manual_seed(seed)
    try:
        blocks = [ReversibleTransformerBlock(d_stream, n_heads) for _ in range(depth)]
    finally:
        torch.set_rng_state(gen_state)
    return ReversibleSequence(blocks).to(dtype).eval()


@torch.no_grad()
def inverse_drift(depth: int, dtype: torch.dtype, d_stream: int = 64, n_heads: int = 4,
                  seq_len: int = 32, batch_size: int = 2, seed: int = 0) -> float:
    """max|x - inverse(forward(x))| / max|x| for a random stack and input (see module doc)."""
    stack = transformer_stack(depth, d_stream, n_heads, dtype, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    x1, x2 = (torch.randn(batch_size, seq_len, d_stream, generator=gen).to(dtype)
              for _ in range(2))
    y1, y2 = stack(x1, x2)
    r1, r2 = stack.inverse(y1, y2)
    err = max((r1.double() - x1.double()).abs().max().item(),
              (r2.double() - x2.double()).abs().max().item())
    scale = max(x1.double().abs().max().item(), x2.double().abs().max().item())
    return err / scale


def drift_table(depths=(1, 4, 16, 64), dtypes=(torch.float64, torch.float32, torch.bfloat16),
                **kwargs) -> dict[str, dict[int, float]]:
    """{dtype name: {depth: drift}} for the given depths and dtypes."""
    return {str(dt).removeprefix("torch."): {L: inverse_drift(L, dt, **kwargs) for L in depths}
            for dt in dtypes}
