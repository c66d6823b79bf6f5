"""Child process of test_rev_ddp: DDP over a reversible stack on the gloo backend.

Each rank trains on its half of a batch; DDP averages gradients, so every rank must end
with the gradient of the mean of the two half-batch losses, computed here in one
process with the standard twin. Loopback only (GLOO_SOCKET_IFNAME=lo, file:// store).
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from rev_helpers import loss_of, rel_err, transformer_stack


class _WithUnusedParameter(nn.Module):
    """Wraps F with an extra parameter that F never uses."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.unused = nn.Parameter(torch.ones(3, dtype=torch.float64))

    def forward(self, x):
        return self.inner(x)


def _stack():
    stack = transformer_stack(depth=3, d=8, heads=2, dropout=0.2)
    stack.blocks[1].f = _WithUnusedParameter(stack.blocks[1].f)
    return stack


def run(rank: int, world: int, init_file: str) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)
    try:
        gen = torch.Generator().manual_seed(5)
        x1, x2 = (torch.randn(2 * world, 4, 8, generator=gen, dtype=torch.float64)
                  for _ in range(2))
        for find_unused in (False, True):
            stack = _stack()
            ref_stack = _stack()
            params = list(stack.parameters())
            ref_params = list(ref_stack.parameters())
            model = DDP(stack, find_unused_parameters=find_unused)
            for it in range(2):  # second iteration reuses the reducer's buckets
                for p in params + ref_params:
                    p.grad = None
                shard = slice(2 * rank, 2 * rank + 2)
                torch.manual_seed(100 * it + rank)  # dropout masks per rank
                loss_of(*model(x1[shard], x2[shard])).backward()
                ref_total = 0.0
                for r in range(world):
                    torch.manual_seed(100 * it + r)
                    sl = slice(2 * r, 2 * r + 2)
                    ref_total = ref_total + loss_of(*ref_stack(x1[sl], x2[sl], reversible=False))
                (ref_total / world).backward()
                for (name, p), q in zip(stack.named_parameters(), ref_params):
                    assert p.grad is not None, name
                    if q.grad is None:  # unused: reversible reports zeros
                        assert name.endswith("unused") and torch.count_nonzero(p.grad) == 0
                        continue
                    err = rel_err(p.grad, q.grad)
                    assert err < 1e-10, (find_unused, it, name, err)
    finally:
        dist.destroy_process_group()
