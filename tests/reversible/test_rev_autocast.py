"""Recomputation under the forward's autocast state: gradients equal the forward graph's."""

import pytest

torch = pytest.importorskip("torch")

from rev_helpers import loss_of, rel_err, transformer_stack  # noqa: E402

pytestmark = pytest.mark.torch


def _bf16_exact_streams(shape=(2, 8, 16), seed=1):
    """float32 streams whose values are bfloat16-representable.

    With F and G returning bfloat16 under autocast, every stream sum x + F(x) is then
    exact in float32, so the reconstruction is exact and any gradient difference can
    only come from recomputing under a different autocast policy.
    """
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(shape, generator=gen).bfloat16().float().requires_grad_(True)
                 for _ in range(2))


def _grads(model, params, x1, x2, forward_autocast: bool, backward_autocast: bool):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=forward_autocast):
        y1, y2 = model(x1, x2)
    loss = loss_of(y1.float(), y2.float())
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=backward_autocast):
        return torch.autograd.grad(loss, [x1, x2, *params])


def test_autocast_gradients_equal_forward_graph():
    stack = transformer_stack(depth=2, dtype=torch.float32)
    params = list(stack.parameters())
    x1, x2 = _bf16_exact_streams()
    g_rev = _grads(stack, params, x1, x2, True, False)
    g_ref = _grads(stack.twin(), params, x1, x2, True, False)
    for a, b in zip(g_rev, g_ref):
        assert rel_err(a, b) < 1e-6
    # the check can fail: the same graph without autocast is far from it
    g_fp32 = _grads(stack.twin(), params, x1, x2, False, False)
    assert max(rel_err(a, b) for a, b in zip(g_fp32, g_ref)) > 1e-3


def test_backward_under_other_autocast_state_uses_forward_state():
    stack = transformer_stack(depth=2, dtype=torch.float32)
    params = list(stack.parameters())
    x1, x2 = _bf16_exact_streams(seed=2)
    # forward in float32, backward called inside an autocast region
    # (float32 sums are inexact here, so the reconstruction carries ~1e-7 relative error;
    # a bfloat16 recomputation would be off by ~1e-2)
    g_rev = _grads(stack, params, x1, x2, False, True)
    g_ref = _grads(stack.twin(), params, x1, x2, False, False)
    for a, b in zip(g_rev, g_ref):
        assert rel_err(a, b) < 1e-5
    # forward under autocast, backward outside it
    g_rev = _grads(stack, params, x1, x2, True, False)
    g_ref = _grads(stack.twin(), params, x1, x2, True, True)
    for a, b in zip(g_rev, g_ref):
        assert rel_err(a, b) < 1e-6
