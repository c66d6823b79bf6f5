"""Backward pass that rebuilds activations from outputs, one autograd node per block.

Design. Each coupling block of a stack is one ``torch.autograd.Function`` node whose
inputs are the two streams *and that block's parameters* (as flat extra arguments).
The nodes are chained: block k's outputs are block k+1's inputs. Blocks 1..L-1 keep no
tensor at all; a small per-block *hand-off slot* carries values backwards instead:

    backward of node k:  (y1, y2) <- slot k (filled by node k+1's backward)
                         x2 = y2 - G(y1),  x1 = y1 - F(x2)   recomputed with grad enabled
                         grads of F, G w.r.t. their inputs and this block's parameters
                         slot k-1 <- (x1, x2);  slot k emptied

The final node keeps its block's ordinary autograd graph (inputs and outputs through
``save_for_backward``, so autograd frees it with the node and its version counters
catch in-place edits of the outputs): backward needs exactly those activations first,
so keeping them costs no more peak memory than rebuilding them, and saves 1/L of the
recomputation. ``store_last=False`` makes it reversible too (it then saves its outputs).

Why this layout, against the alternatives:
* One Function for the whole stack would have to return the gradients of *all*
  parameters at once from a single ``backward`` -- a second O(depth) copy of them held
  until it returns. Per-block nodes return only their own block's gradients, which the
  engine accumulates (``AccumulateGrad``, DDP's reducer hooks) before the next node runs.
* Parameters are Function inputs, so ``torch.autograd.grad(loss, params)`` reaches them
  like any other leaf, ``loss.backward()`` accumulates into ``.grad``, and DDP's graph
  traversal (``find_unused_parameters=True``) finds them. Manual ``p.grad +=`` would
  be invisible to ``autograd.grad`` and to DDP's hooks.
* The engine runs node k before node k-1 because k-1's outputs feed k, so the slot is
  always filled before it is read. The caller's tensors are never resized, freed or
  written: reconstructed values are new tensors.
* Recomputation replays the forward's RNG state (only when F or G drew random numbers)
  and the forward's autocast state, and the per-block ``autograd.grad`` runs under that
  autocast state too, so the rebuilt graph and its backward are the forward's, whatever
  autocast region the caller is in when calling ``backward()``.
Cost: F and G of blocks 1..L-1 run twice: ~(L-1)/L extra forward, like activation
checkpointing (Chen et al. 2016), but the stored state is O(1) in depth instead of one
block input per block (Gomez et al. 2017, "The Reversible Residual Network").
Not supported: double backward (``create_graph=True``), modules that update buffers in
their forward (they would update twice), randomness from private ``torch.Generator``s.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch.autograd.function import once_differentiable

from tokenomy.reversible._replay import (
    AutocastState,
    RngState,
    device_types_of,
    forked_rng,
    used_state,
)
from tokenomy.reversible.coupling import AdditiveCoupling


class _Slot:
    """Hand-off box: node k+1's backward puts node k's outputs here.

    ``owned``: the tensors were made by a rebuild and nothing else refers to them, so
    the receiving node may overwrite them (saves two allocations per block).
    """

    __slots__ = ("tensors", "owned")

    def __init__(self) -> None:
        self.tensors: tuple[torch.Tensor, torch.Tensor] | None = None
        self.owned = False


def _grad(output: torch.Tensor, wrt: list[torch.Tensor], grad_out: torch.Tensor):
    """d<output, grad_out>/d wrt, with None where unused (grad_out cast like autograd's add)."""
    if not output.requires_grad:
        return [None] * len(wrt)
    return torch.autograd.grad(output, wrt, grad_out.to(output.dtype), allow_unused=True)


def _align(params, grads) -> list:
    """One entry per parameter: its gradient, zeros if F/G did not use it, None if frozen.

    Zeros rather than None for an unused parameter: it *is* an input of this node, so
    DDP's graph traversal counts it as used and waits for its gradient.
    """
    it = iter(grads)
    out = []
    for p in params:
        if not p.requires_grad:
            out.append(None)
            continue
        g = next(it)
        out.append(torch.zeros_like(p) if g is None else g)
    return out


class _CouplingNode(torch.autograd.Function):
    """One block: (x1, x2, *params_F, *params_G) -> (y1, y2), rebuilt or stored.

    ``store=False``: F and G run without a graph; backward rebuilds the inputs.
    ``store=True`` (final block): F and G run with an inner graph, kept alive through
    ``save_for_backward`` of its inputs and outputs, so autograd frees it with this node.
    """

    @staticmethod
    def forward(ctx, block: AdditiveCoupling, out_slot: _Slot | None, in_slot: _Slot | None,
                n_f: int, store: bool, x1: torch.Tensor, x2: torch.Tensor,
                *params: torch.Tensor):
        devices = RngState.devices_of((x1, x2))
        ctx.autocast = AutocastState.capture(device_types_of((x1, x2)))
        with torch.set_grad_enabled(store):
            if store:
                x1, x2 = x1.detach().requires_grad_(True), x2.detach().requires_grad_(True)
            before_f = RngState.capture(devices)
            f_out = block.f(x2)
            before_g = RngState.capture(devices)
            y1 = x1 + f_out
            del f_out
            g_out = block.g(y1)
            after_g = RngState.capture(devices)
            y2 = x2 + g_out
        ctx.rng_f = used_state(before_f, before_g)
        ctx.rng_g = used_state(before_g, after_g)
        ctx.devices = devices
        ctx.block, ctx.out_slot, ctx.in_slot = block, out_slot, in_slot
        ctx.params_f, ctx.params_g = params[:n_f], params[n_f:]
        ctx.store = store
        if store:  # the inner graph lives exactly as long as autograd keeps these
            ctx.save_for_backward(x1, x2, y1, y2)
            return y1.detach(), y2.detach()
        if out_slot is None:  # last node of the stack: the only stored outputs
            ctx.save_for_backward(y1, y2)
        return y1, y2

    @staticmethod
    @once_differentiable
    def backward(ctx, dy1: torch.Tensor, dy2: torch.Tensor):
        pf = [p for p in ctx.params_f if p.requires_grad]
        pg = [p for p in ctx.params_g if p.requires_grad]
        if ctx.store:
            grads, x1, x2 = _stored_grads(ctx, dy1, dy2, pf, pg)
            dx1, dx2 = grads[0], grads[1]
            grads_f, grads_g = grads[2:2 + len(pf)], grads[2 + len(pf):]
        else:
            x1, x2, dx1, dx2, grads_f, grads_g = _rebuild_and_grad(ctx, dy1, dy2, pf, pg)
        if ctx.in_slot is not None:
            ctx.in_slot.tensors = (x1, x2)
            ctx.in_slot.owned = not ctx.store  # stored inputs are also saved tensors
        param_grads = _align(ctx.params_f, grads_f) + _align(ctx.params_g, grads_g)
        return (None, None, None, None, None,
                dx1 if ctx.needs_input_grad[5] else None,
                dx2 if ctx.needs_input_grad[6] else None,
                *param_grads)


def _stored_grads(ctx, dy1, dy2, pf, pg):
    """Gradients through the final block's kept graph (rebuilt from its inputs if used).

    The first backward consumes the kept graph (``retain_graph=False``: compiled
    functions with donated buffers allow nothing else). A second outer backward
    (``retain_graph=True``) replays the forward from the saved inputs with the same RNG
    and autocast state, so it builds the same graph and gives bitwise the same result.
    """
    x1, x2, y1, y2 = ctx.saved_tensors
    with torch.enable_grad(), ctx.autocast.replay():
        if getattr(ctx, "graph_used", False):
            state = ctx.rng_f if ctx.rng_f is not None else ctx.rng_g
            with forked_rng(ctx.devices, state is not None):
                if state is not None:
                    state.restore()
                y1 = x1 + ctx.block.f(x2)
                y2 = x2 + ctx.block.g(y1)
        ctx.graph_used = True
        grads = torch.autograd.grad((y1, y2), (x1, x2, *pf, *pg),
                                    (dy1.to(y1.dtype), dy2.to(y2.dtype)), allow_unused=True)
    return grads, x1.detach(), x2.detach()


def _rebuild_and_grad(ctx, dy1, dy2, pf, pg):
    """Inputs from outputs (x2 = y2 - G(y1), x1 = y1 - F(x2)) and the block's gradients."""
    owned = False  # saved outputs are the caller's: never overwritten
    if ctx.out_slot is None:
        y1, y2 = ctx.saved_tensors
    else:
        if ctx.out_slot.tensors is None:
            raise RuntimeError("reversible stack: backward reached a block whose "
                               "outputs were not rebuilt (was the graph freed?)")
        y1, y2 = ctx.out_slot.tensors
        owned = ctx.out_slot.owned
        ctx.out_slot.tensors = None
    block = ctx.block
    needed = ctx.rng_f is not None or ctx.rng_g is not None
    with torch.enable_grad(), ctx.autocast.replay(), forked_rng(ctx.devices, needed):
        # y2 = x2 + G(y1): G's input y1 is known, so undo this half first.
        if ctx.rng_g is not None:
            ctx.rng_g.restore()
        y1_leaf = y1.detach().requires_grad_(True)
        g_out = block.g(y1_leaf)
        grads_g = _grad(g_out, [y1_leaf, *pg], dy2)
        with torch.no_grad():
            x2 = y2.sub_(g_out) if owned else y2 - g_out
        del g_out, y1_leaf
        dx1 = dy1 if grads_g[0] is None else dy1 + grads_g[0]
        # y1 = x1 + F(x2): x2 is now known.
        if ctx.rng_f is not None:
            ctx.rng_f.restore()
        x2_leaf = x2.detach().requires_grad_(True)
        f_out = block.f(x2_leaf)
        grads_f = _grad(f_out, [x2_leaf, *pf], dx1)
        with torch.no_grad():  # y1's only other user, G's graph, is freed by now
            x1 = y1.sub_(f_out) if owned else y1 - f_out
        del f_out, x2_leaf
    dx2 = dy2 if grads_f[0] is None else dy2 + grads_f[0]
    return x1, x2, dx1, dx2, grads_f[1:], grads_g[1:]


def _needs_graph(x1: torch.Tensor, x2: torch.Tensor, blocks: Sequence[AdditiveCoupling]) -> bool:
    if not torch.is_grad_enabled():
        return False
    if x1.requires_grad or x2.requires_grad:
        return True
    return any(p.requires_grad for b in blocks for p in b.parameters())


def reversible_forward(blocks: Sequence[AdditiveCoupling], x1: torch.Tensor,
                       x2: torch.Tensor, store_last: bool = True
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``blocks`` in order; the backward rebuilds each block's input from its output.

    Activation memory kept for backward is independent of the depth L: the output
    streams of the last reversible block plus, with ``store_last``, the ordinary autograd
    activations of the final block (vs. L block inputs for per-block checkpointing, L
    full block activation sets for plain autograd). ``store_last``: the final block is
    the first one backward needs, so recomputing it would only redo its forward; its
    activations are the same size as the one-block working set of the reversible
    backward, so the peak does not grow and one recomputation in L is saved.
    """
    blocks = list(blocks)
    if not blocks:
        return x1, x2
    if not _needs_graph(x1, x2, blocks):
        for block in blocks:
            x1, x2 = block(x1, x2)
        return x1, x2
    slots = [_Slot() for _ in blocks[:-1]]
    for k, block in enumerate(blocks):
        params_f, params_g = block.parameter_groups()
        out_slot = slots[k] if k < len(slots) else None
        in_slot = slots[k - 1] if k > 0 else None
        store = store_last and out_slot is None
        x1, x2 = _CouplingNode.apply(block, out_slot, in_slot, len(params_f), store, x1, x2,
                                     *params_f, *params_g)
    return x1, x2
