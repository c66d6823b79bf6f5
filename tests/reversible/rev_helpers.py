"""Shared builders for the reversible tests (imported by the test modules)."""

from __future__ import annotations

import torch
from torch import nn

from tokenomy.reversible.coupling import AdditiveCoupling
from tokenomy.reversible.stack import ReversibleSequence
from tokenomy.reversible.transformer import ReversibleTransformerBlock


def transformer_stack(depth: int, d: int = 16, heads: int = 2, dropout: float = 0.0,
                      dtype=torch.float64, seed: int = 0) -> ReversibleSequence:
    """Stack of reversible transformer blocks with deterministic initial weights."""
    torch.manual_seed(seed)
    blocks = [ReversibleTransformerBlock(d, heads, dropout=dropout, attn_dropout=dropout)
              for _ in range(depth)]
    return ReversibleSequence(blocks).to(dtype)


def mlp_stack(depth: int, d: int = 8, dtype=torch.float64, seed: int = 0) -> ReversibleSequence:
    """Stack of couplings with small tanh MLPs as F and G."""
    torch.manual_seed(seed)

    def mlp():
        return nn.Sequential(nn.Linear(d, 2 * d), nn.Tanh(), nn.Linear(2 * d, d))

    return ReversibleSequence([AdditiveCoupling(mlp(), mlp()) for _ in range(depth)]).to(dtype)


def streams(shape=(2, 8, 16), dtype=torch.float64, seed: int = 1, requires_grad=True):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(shape, generator=gen, dtype=dtype).requires_grad_(requires_grad)
                 for _ in range(2))


def loss_of(y1: torch.Tensor, y2: torch.Tensor) -> torch.Tensor:
    """A loss whose gradient differs per element (so mistakes cannot cancel)."""
    w = torch.linspace(-1, 1, y1.numel(), dtype=y1.dtype).view_as(y1)
    return (w * y1).sum() + (y2 * y2).mean() + (y1 * y2).sum() * 1e-2


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """max|a - b| / max|b| (0 when both are zero)."""
    scale = b.abs().max().item()
    diff = (a.double() - b.double()).abs().max().item()
    return diff if scale == 0 else diff / scale


def grads_of(model, x1, x2, params, seed: int = 123, via: str = "grad"):
    """Gradients of loss_of(model(x1, x2)) w.r.t. (inputs that need grad) + params."""
    torch.manual_seed(seed)
    y1, y2 = model(x1, x2)
    loss = loss_of(y1, y2)
    leaves = [t for t in (x1, x2) if t.requires_grad] + list(params)
    if via == "grad":
        return loss.detach(), list(torch.autograd.grad(loss, leaves))
    for t in leaves:
        t.grad = None
    loss.backward()
    out = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    return loss.detach(), out
