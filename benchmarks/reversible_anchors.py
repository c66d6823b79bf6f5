"""What the anchors (revlib, memcnn) get wrong that tokenomy.reversible gets right.

    build/reversible-bench-venv/bin/python benchmarks/reversible_anchors.py

One coupling block y1 = x1 + F(x2), y2 = x2 + G(y1) with F, G = Linear-Dropout(0.3)-Tanh
in float64, the same weights for every implementation; each check prints its finding:
  * dropout: parameter gradients vs plain autograd (same seed), max relative error;
  * caller's input: storage bytes between forward and backward (0 = freed);
  * torch.autograd.grad(loss, params) works;
  * input without requires_grad works.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from tokenomy.reversible.coupling import AdditiveCoupling  # noqa: E402
from tokenomy.reversible.stack import ReversibleSequence  # noqa: E402

D = 8


def _branch() -> nn.Module:
    return nn.Sequential(nn.Linear(D, D), nn.Dropout(0.3), nn.Tanh()).double()


def implementations(f: nn.Module, g: nn.Module) -> dict:
    """name -> function of x (B, 2D) -> y (B, 2D); all share f and g."""
    out = {}
    stack = ReversibleSequence([AdditiveCoupling(f, g)], store_last=False)
    out["tokenomy"] = lambda x: torch.cat(stack(*x.chunk(2, -1)), -1)
    try:
        import revlib
        out["revlib"] = revlib.ReversibleSequential(f, g, split_dim=-1)
    except ImportError:
        pass
    try:
        import memcnn
        out["memcnn"] = memcnn.InvertibleModuleWrapper(
            memcnn.AdditiveCoupling(f, g, split_dim=-1), preserve_rng_state=True)
    except ImportError:
        pass
    return out


def _try(fn):
    try:
        return fn()
    except Exception as exc:  # report the anchor's own error message
        return f"error: {str(exc).splitlines()[0][:70]}"


def main() -> int:
    torch.manual_seed(0)
    f, g = _branch(), _branch()
    params = list(f.parameters()) + list(g.parameters())
    x0 = torch.randn(4, 2 * D, dtype=torch.float64)

    def plain(x):
        x1, x2 = x.chunk(2, -1)
        y1 = x1 + f(x2)
        return torch.cat([y1, x2 + g(y1)], -1)

    def param_grads(fn):
        torch.manual_seed(1)
        y = fn(x0.clone().requires_grad_(True))
        return torch.autograd.grad((y * y).sum(), params, allow_unused=True)

    ref = param_grads(plain)
    for name, fn in implementations(f, g).items():
        def dropout_err():
            for p in params:
                p.grad = None
            x = x0.clone().requires_grad_(True)
            torch.manual_seed(1)
            (fn(x) ** 2).sum().backward()
            return f"{max(((p.grad - r).abs().max() / r.abs().max()).item() for p, r in zip(params, ref)):.1e}"

        def storage_between():
            x = x0.clone().requires_grad_(True)
            y = fn(x)
            nbytes = x.untyped_storage().nbytes()
            y.sum().backward()
            return f"{nbytes} of {x0.numel() * 8}"

        def grad_api():
            x = x0.clone().requires_grad_(True)
            torch.autograd.grad(fn(x).sum(), params)
            return "ok"

        def frozen_input():
            fn(x0.clone()).sum().backward()
            return "ok"

        print(f"{name:9s} dropout grad rel err: {_try(dropout_err)} | input bytes between "
              f"fwd/bwd: {_try(storage_between)} | autograd.grad(params): {_try(grad_api)} "
              f"| input w/o requires_grad: {_try(frozen_input)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
