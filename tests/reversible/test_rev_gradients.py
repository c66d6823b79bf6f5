"""Reversible gradients equal the standard twin's (float64), incl. dropout and gradcheck."""

import pytest

torch = pytest.importorskip("torch")

from rev_helpers import grads_of, loss_of, mlp_stack, rel_err, streams, transformer_stack  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("via", ["grad", "backward"])
@pytest.mark.parametrize("inputs_require_grad", [True, False])
@pytest.mark.parametrize("store_last", [True, False])
def test_gradients_equal_twin_float64(via, inputs_require_grad, store_last):
    stack = transformer_stack(depth=4)
    stack.store_last = store_last
    params = list(stack.parameters())
    x1, x2 = streams(requires_grad=inputs_require_grad)
    loss_r, g_r = grads_of(stack, x1, x2, params, via=via)
    loss_t, g_t = grads_of(stack.twin(), x1, x2, params, via=via)
    assert len(g_r) == len(params) + (2 if inputs_require_grad else 0)
    assert torch.equal(loss_r, loss_t)
    for a, b in zip(g_r, g_t):
        assert rel_err(a, b) < 1e-10
    assert all(g.abs().max() > 0 for g in g_r)  # every parameter got a real gradient


@pytest.mark.parametrize("store_last", [True, False])
def test_dropout_gradients_exact_and_rng_stream_untouched(store_last):
    stack = transformer_stack(depth=3, dropout=0.3)
    stack.store_last = store_last
    params = list(stack.parameters())
    x1, x2 = streams()

    def run(model):
        torch.manual_seed(7)
        y1, y2 = model(x1, x2)
        torch.rand(1000)  # the program draws random numbers between forward and backward
        g = torch.autograd.grad(loss_of(y1, y2), [x1, x2, *params])
        return g, torch.rand(3)  # what the program draws next

    g_r, after_r = run(stack)
    g_t, after_t = run(stack.twin())
    assert torch.equal(after_r, after_t)  # replay restored the caller's RNG stream
    for a, b in zip(g_r, g_t):
        assert rel_err(a, b) < 1e-10
    # the masks matter: a different seed gives different gradients
    torch.manual_seed(8)
    y1, y2 = stack.twin()(x1, x2)
    g_other = torch.autograd.grad(loss_of(y1, y2), [x1])
    assert rel_err(g_other[0], g_t[0]) > 1e-3


def test_gradcheck_over_inputs_and_parameters():
    stack = transformer_stack(depth=2, d=4, heads=2)
    params = tuple(stack.parameters())
    x1, x2 = streams(shape=(1, 3, 4))

    def fn(a, b, *ps):  # ps are the very parameters the stack uses (gradcheck perturbs them)
        return stack(a, b)

    # fast mode: checks J v for random v over all inputs and parameters at once
    assert torch.autograd.gradcheck(fn, (x1, x2, *params), eps=1e-6, atol=1e-7,
                                    fast_mode=True)


def test_gradcheck_mlp_coupling_with_one_input_frozen():
    stack = mlp_stack(depth=3, d=3)
    x1, _ = streams(shape=(2, 3))
    x2 = torch.randn(2, 3, dtype=torch.float64)  # no requires_grad
    params = tuple(stack.parameters())
    assert torch.autograd.gradcheck(lambda a, *ps: stack(a, x2), (x1, *params), eps=1e-6,
                                    atol=1e-7)


@pytest.mark.parametrize("store_last", [True, False])
def test_retain_graph_second_backward_gives_same_gradients(store_last):
    stack = transformer_stack(depth=3, dropout=0.2)
    stack.store_last = store_last
    x1, x2 = streams()
    loss = loss_of(*stack(x1, x2))
    first = torch.autograd.grad(loss, [x1, *stack.parameters()], retain_graph=True)
    second = torch.autograd.grad(loss, [x1, *stack.parameters()])
    for a, b in zip(first, second):
        assert torch.equal(a, b)


def test_parameter_gradients_accumulate_block_by_block():
    """Block k's .grad is filled before block k-1 is recomputed (no all-at-once copy)."""
    depth = 4
    stack = transformer_stack(depth=depth)
    events = []
    for k, block in enumerate(stack.blocks):
        block.f.register_forward_hook(
            lambda m, i, o, k=k: events.append(("recompute", k)) if torch.is_grad_enabled() else None)
        for p in block.parameters():
            p.register_post_accumulate_grad_hook(lambda p, k=k: events.append(("grad", k)))
    x1, x2 = streams()
    loss_of(*stack(x1, x2)).backward()
    order = [k for kind, k in events if kind == "recompute"]
    assert order == list(reversed(range(depth)))
    for k in range(1, depth):
        last_grad_k = max(i for i, e in enumerate(events) if e == ("grad", k))
        recompute_prev = events.index(("recompute", k - 1))
        assert last_grad_k < recompute_prev


def test_inputs_and_outputs_of_the_caller_are_kept_intact():
    stack = transformer_stack(depth=3)
    x1, x2 = streams()
    copies = (x1.detach().clone(), x2.detach().clone())
    ptrs = (x1.untyped_storage().data_ptr(), x2.untyped_storage().data_ptr())
    sizes = (x1.untyped_storage().nbytes(), x2.untyped_storage().nbytes())
    y1, y2 = stack(x1, x2)
    y_copies = (y1.detach().clone(), y2.detach().clone())
    loss_of(y1, y2).backward()
    assert torch.equal(x1, copies[0]) and torch.equal(x2, copies[1])
    assert (x1.untyped_storage().data_ptr(), x2.untyped_storage().data_ptr()) == ptrs
    assert (x1.untyped_storage().nbytes(), x2.untyped_storage().nbytes()) == sizes
    assert torch.equal(y1, y_copies[0]) and torch.equal(y2, y_copies[1])


def test_in_place_edit_of_outputs_is_detected_not_silently_wrong():
    stack = transformer_stack(depth=2)
    x1, x2 = streams()
    y1, y2 = stack(x1, x2)
    loss = loss_of(y1, y2.clone())
    with torch.no_grad():
        y1.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_no_grad_forward_matches_and_keeps_no_graph():
    stack = transformer_stack(depth=3)
    x1, x2 = streams(requires_grad=False)
    with torch.no_grad():
        y = stack(x1, x2)
    ref = stack.twin()(x1, x2)
    assert y[0].grad_fn is None
    assert torch.equal(y[0], ref[0]) and torch.equal(y[1], ref[1])
