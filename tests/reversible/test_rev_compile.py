"""torch.compile applied to F and G: reversible gradients equal the eager twin's."""

import pytest

torch = pytest.importorskip("torch")

from rev_helpers import loss_of, rel_err, transformer_stack  # noqa: E402

from tokenomy.reversible.coupling import AdditiveCoupling  # noqa: E402
from tokenomy.reversible.stack import ReversibleSequence  # noqa: E402

pytestmark = pytest.mark.torch


def _compiled_copy(stack: ReversibleSequence, backend: str) -> ReversibleSequence:
    """Same parameter objects, F and G wrapped by torch.compile."""
    return ReversibleSequence([
        AdditiveCoupling(torch.compile(b.f, backend=backend), torch.compile(b.g, backend=backend))
        for b in stack.blocks])


def _grads(model, params, x1, x2, seed=3):
    torch.manual_seed(seed)
    return torch.autograd.grad(loss_of(*model(x1, x2)), [x1, x2, *params])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_f_g_gradients_equal_eager_twin(backend):
    torch._dynamo.reset()
    stack = transformer_stack(depth=2, d=8, heads=2, dtype=torch.float32)
    params = list(stack.parameters())
    compiled = _compiled_copy(stack, backend)
    x1, x2 = (torch.randn(1, 4, 8).requires_grad_(True) for _ in range(2))
    g_rev = _grads(compiled, params, x1, x2)
    g_ref = _grads(stack.twin(), params, x1, x2)
    for a, b in zip(g_rev, g_ref):
        assert rel_err(a, b) < 1e-5


def test_compiled_dropout_replayed_aot_eager():
    torch._dynamo.reset()
    stack = transformer_stack(depth=2, d=8, heads=2, dropout=0.3, dtype=torch.float32)
    params = list(stack.parameters())
    compiled = _compiled_copy(stack, "aot_eager")
    x1, x2 = (torch.randn(1, 4, 8).requires_grad_(True) for _ in range(2))
    g_rev = _grads(compiled, params, x1, x2)
    g_ref = _grads(stack.twin(), params, x1, x2)
    for a, b in zip(g_rev, g_ref):
        assert rel_err(a, b) < 1e-5
