"""FLOPs and bytes of each op shape of one pass, for the roofline plot's points (web Serve page), from the engine.

Ops of identical shape in different layers are grouped (count = layers). Each group's figures are the engine's
(core/engine.work) run on the coefficients of that group alone (core/coeffs.coefficients with a filter), so they are
what the busiest chip of a stage does per micro-batch on the deployment's layout:
    flops = dense_flops + expert_flops          bytes = weight_bytes + kv_bytes + act_bytes
The engine is linear in the op sums, so the groups add up to the whole pass (attention takes the cheaper of its
absorbed and plain forms per group, which is the whole pass's choice when the attention layers are alike).
Each group is also timed by the engine (core/engine.kernel_terms on the group's work, the deployment's efficiency set):
its compute term (GEMM efficiency at the pass's rows) and its memory term split by what is read (weights, KV,
activations), which add up to the pass's compute and memory terms. Communication, the kernels' launch floor and
the host's time belong to the step, not to an op (the critical path shows them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.ops import Op, lower
from tokenomy.core import engine
from tokenomy.core.coeffs import coefficients, shape_of
from tokenomy.core.deployment import Deployment


@dataclass(frozen=True)
class OpCost:
    """One op shape of the pass on the busiest chip of a stage, per micro-batch, summed over ``count`` layers."""

    name: str  # the op's role, e.g. "attn.proj", "mlp", "experts", "lm_head"
    kind: str
    count: int
    flops: float
    bytes: float  # read + written
    weight_bytes: float = 0.0  # the bytes by what they are
    kv_bytes: float = 0.0
    act_bytes: float = 0.0
    compute_s: float | None = None  # the engine's terms for this group alone (module docstring)
    weights_s: float | None = None
    kv_s: float | None = None
    act_s: float | None = None

    @property
    def memory_s(self) -> float | None:
        return None if self.weights_s is None else self.weights_s + self.kv_s + self.act_s

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte."""
        return self.flops / self.bytes if self.bytes else float("inf")


def _role(op: Op) -> str:
    role = op.name.split(".", 1)[1] if op.layer >= 0 else op.name
    return f"{role} (window {op.window})" if op.window else role


def _key(op: Op) -> tuple:
    return (_role(op), op.kind, op.params, op.window, op.kv_elems_per_token, op.score_flops_decode)


def per_chip(w: engine.Work) -> tuple[float, float]:
    """(FLOPs, bytes) the busiest chip of a stage runs and moves per micro-batch (scalar work)."""
    return (float(np.asarray(w.dense_flops + w.attn_flops + w.expert_flops)),
            float(np.asarray(w.weight_bytes + w.kv_bytes + w.act_bytes)))


def op_costs(dep: Deployment, *, batch: float, context: float, len_pass: float = 1) -> list[OpCost]:
    """Per-op-shape FLOPs and bytes of one pass at scalar batch, context and len_pass, in op-list order."""
    groups: dict[tuple, int] = {}
    for op in lower(dep.model):
        groups[_key(op)] = groups.get(_key(op), 0) + 1
    names = [k[0] for k in groups]
    out: list[OpCost] = []
    for key, n in groups.items():
        shape = shape_of(dep.model, coefficients(dep.model, keep=lambda op, k=key: _key(op) == k))
        w = engine.work(shape, dep.topo, dep.layout, dep.precision, engine.Pass(batch, context, len_pass))
        f, b = per_chip(w)
        terms = engine.kernel_terms(w, dep.peaks, dep.eff)  # unmasked: a dense part of an EP layout is no layout
        role = key[0]
        label = role if names.count(role) == 1 else f"{role} #{sum(1 for o in out if o.name.startswith(role)) + 1}"
        out.append(OpCost(label, key[1], n, f, b, *(float(np.asarray(x)) for x in (
            (w.weight_bytes, w.kv_bytes, w.act_bytes) + terms))))
    return out
