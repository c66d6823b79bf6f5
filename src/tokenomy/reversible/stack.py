"""A stack of coupling blocks, run reversibly or as its standard (stored-activation) twin.

Both modes compute the same function with the same parameters,

    (x1, x2)_k = block_k((x1, x2)_{k-1}),   k = 1..L,

and differ only in what autograd keeps: the standard twin stores every block's
activations (memory ~ L), the reversible mode stores the final two streams and rebuilds
the rest in backward (memory ~ 1; Gomez et al. 2017).
"""

from __future__ import annotations

from typing import Iterable

import torch
from torch import nn

from tokenomy.reversible.coupling import AdditiveCoupling
from tokenomy.reversible.engine import reversible_forward


class ReversibleSequence(nn.Module):
    """Sequence of :class:`AdditiveCoupling` blocks on two streams.

    ``forward(x1, x2, reversible=None)`` runs reversibly unless ``reversible`` (or the
    constructor's default) is False. ``store_last`` keeps the final block's ordinary
    activations instead of recomputing them (same peak, one recomputation fewer).
    :meth:`twin` gives the standard twin sharing these very parameters; :meth:`inverse`
    rebuilds the inputs from the outputs.
    """

    def __init__(self, blocks: Iterable[AdditiveCoupling], reversible: bool = True,
                 store_last: bool = True) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        for block in self.blocks:
            if not isinstance(block, AdditiveCoupling):
                raise TypeError(f"blocks must be AdditiveCoupling, got {type(block).__name__}")
        self.reversible = reversible
        self.store_last = store_last

    def forward(self, x1: torch.Tensor, x2: torch.Tensor,
                reversible: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply every block in order; see :func:`reversible_forward` for the memory."""
        if self.reversible if reversible is None else reversible:
            return reversible_forward(self.blocks, x1, x2, self.store_last)
        for block in self.blocks:
            x1, x2 = block(x1, x2)
        return x1, x2

    def inverse(self, y1: torch.Tensor, y2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs from outputs, blocks in reverse: x = block_1^-1(...block_L^-1(y))."""
        for block in reversed(self.blocks):
            y1, y2 = block.inverse(y1, y2)
        return y1, y2

    def twin(self) -> "StandardTwin":
        """The same stack, same parameter objects, run with ordinary autograd."""
        return StandardTwin(self)

    def __len__(self) -> int:
        return len(self.blocks)


class StandardTwin(nn.Module):
    """View of a reversible model that calls it with ``reversible=False``.

    It owns no parameters of its own: ``twin.parameters()`` are the wrapped model's,
    so gradients of the two can be compared one to one.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args, **kwargs):
        """Call the wrapped model in standard (activation-storing) mode."""
        return self.model(*args, reversible=False, **kwargs)
