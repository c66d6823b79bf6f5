"""FLOPs and bytes of each op of one pass, for the roofline plot's points (web Serve page).

The same per-op formulas as arch/ops.py's docstring and core/roofline.step, evaluated op by op instead of
summed into coefficients; ops of identical shape in different layers are grouped (count = layers). For
T = B·S new tokens over a context of C positions (C̄ = C − (S−1)/2 the mean attended length):
    matmul     FLOPs = 2·params·T              bytes = params·w + act
    expert     FLOPs = 2·k·params·T            bytes = params·w·E·(1−(1−k/E)^T) + act
    attention  FLOPs = score·min(C̄, window)·T  bytes = B·kv·min(C, window)·kv_b + T·kv·kv_b + act
    embed      FLOPs = 0                        bytes = act
with act = T·act_elems·2 bytes. Summed over the list they equal the engine's flops and bytes (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.arch.ops import Op, lower
from tokenomy.core.roofline import experts_touched
from tokenomy.units import dtype_bytes

ACT_BYTES = 2.0  # bf16 activations, as core/roofline.step's default


@dataclass(frozen=True)
class OpCost:
    """One op shape of the pass, summed over the ``count`` layers that share it."""

    name: str  # the op's role, e.g. "attn.proj", "mlp", "experts", "lm_head"
    kind: str
    count: int
    flops: float
    bytes: float  # read + written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte."""
        return self.flops / self.bytes if self.bytes else float("inf")


def _role(op: Op) -> str:
    role = op.name.split(".", 1)[1] if op.layer >= 0 else op.name
    return f"{role} (window {op.window})" if op.window else role


def _cost(op: Op, B: float, C: float, S: float, w: dict[str, float], kv_b: float) -> tuple[float, float]:
    T = B * S
    act = T * op.act_elems_per_token * ACT_BYTES
    if op.kind == "matmul":
        return 2.0 * op.params * T, op.params * w[op.category] + act
    if op.kind == "expert":
        touched = experts_touched(T, op.num_experts, op.experts_per_tok)
        return 2.0 * op.experts_per_tok * op.params * T, op.params * w[op.category] * touched + act
    if op.kind == "attention":
        window = float(op.window) if op.window else np.inf
        score = op.score_flops_decode if S <= 1 else op.score_flops_prefill
        c_avg = C - (S - 1.0) / 2.0
        kv = op.kv_elems_per_token * kv_b
        return T * score * min(c_avg, window), B * kv * min(C, window) + T * kv + act
    return 0.0, act  # embed: a gather


def op_costs(m: ModelArch, *, batch: float, context: float, len_pass: float = 1, weight_dtype: str | None = None,
             kv_dtype: str = "bf16") -> list[OpCost]:
    """Per-op-shape FLOPs and bytes of one pass at scalar batch, context and len_pass, in op-list order."""
    q = m.quantization
    w = ({"dense": dtype_bytes(q.dense), "embed": dtype_bytes(q.embed), "expert": dtype_bytes(q.expert)}
         if weight_dtype is None else dict.fromkeys(("dense", "embed", "expert"), dtype_bytes(weight_dtype)))
    kv_b = dtype_bytes(kv_dtype)
    groups: dict[tuple, list] = {}
    for op in lower(m):
        f, b = _cost(op, float(batch), float(context), float(len_pass), w, kv_b)
        key = (_role(op), op.kind, op.params, op.window, op.kv_elems_per_token, op.score_flops_decode)
        g = groups.setdefault(key, [0, 0.0, 0.0])
        g[0], g[1], g[2] = g[0] + 1, g[1] + f, g[2] + b
    names = [k[0] for k in groups]
    out = []
    for (role, kind, *_), (n, f, b) in groups.items():
        label = role if names.count(role) == 1 else f"{role} #{sum(1 for o in out if o.name.startswith(role)) + 1}"
        out.append(OpCost(label, kind, n, f, b))
    return out
