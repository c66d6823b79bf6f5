"""Additive coupling: one Feistel round on two streams, and its exact inverse.

    forward:  y1 = x1 + F(x2)          inverse:  x2 = y2 - G(y1)
              y2 = x2 + G(y1)                     x1 = y1 - F(x2)

F and G are any functions (here ``nn.Module``s) and need not be invertible: the round is
invertible because each half only ever has something *added* to it that can be
recomputed from the other half. Source: Gomez et al. 2017, "The Reversible Residual
Network", sec. 3; the Feistel cipher structure (Feistel 1973) is the
same construction over GF(2) (lecture section 2.15). In exact arithmetic the inverse is
exact; in floating point x1 + F(x2) - F(x2) differs from x1 by at most one rounding of
the sum, which is what the drift tests measure.
"""

from __future__ import annotations

import torch
from torch import nn


def unique_parameters(module: nn.Module) -> tuple[nn.Parameter, ...]:
    """Parameters of ``module`` without duplicates (shared weights appear once)."""
    return tuple(dict.fromkeys(module.parameters()))


class AdditiveCoupling(nn.Module):
    """Reversible block ``(x1, x2) -> (x1 + F(x2), x2 + G(x1 + F(x2)))``.

    ``f`` maps the second stream to an update of the first; ``g`` maps the new first
    stream to an update of the second. Both must return tensors of the stream's shape.
    Their parameters must be their own (``f.parameters()``, ``g.parameters()``): the
    reversible engine hands exactly those to autograd.
    """

    def __init__(self, f: nn.Module, g: nn.Module) -> None:
        super().__init__()
        self.f = f
        self.g = g

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One round with an ordinary autograd graph (the "standard twin" path)."""
        y1 = x1 + self.f(x2)
        y2 = x2 + self.g(y1)
        return y1, y2

    def inverse(self, y1: torch.Tensor, y2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rebuild ``(x1, x2)`` from ``(y1, y2)``: x2 = y2 - G(y1), x1 = y1 - F(x2)."""
        x2 = y2 - self.g(y1)
        x1 = y1 - self.f(x2)
        return x1, x2

    def parameter_groups(self) -> tuple[tuple[nn.Parameter, ...], tuple[nn.Parameter, ...]]:
        """(parameters of F, parameters of G), each without duplicates."""
        return unique_parameters(self.f), unique_parameters(self.g)
