"""Derivations with the numbers plugged in, for --explain and the web's explain panel."""

from __future__ import annotations

import numpy as np

from tokenomy.core.coeffs import ModelCoeffs
from tokenomy.core.inference import PassResult
from tokenomy.core.roofline import experts_touched
from tokenomy.units import fmt_bytes, fmt_seconds, fmt_si


def _at(x, i: int) -> float:
    return float(np.ravel(x)[i]) if np.size(x) > 1 else float(np.ravel(x)[0])


def explain_pass(r: PassResult, c: ModelCoeffs, i: int) -> list[str]:
    """The roofline terms of grid point ``i`` of ``r``, as formula = numbers = value."""
    s, n = r.step, r.chips
    shape = np.broadcast(s.batch, s.context, s.len_pass).shape
    g = lambda x: _at(np.broadcast_to(x, shape), i)  # noqa: E731
    B, C, S = g(s.batch), g(s.context), g(s.len_pass)
    T = B * S
    lines = [f"[bold]{r.model} on {n} x {r.hardware}: batch B={B:g}, context C={C:g}, len_pass S={S:g} "
             f"(T = B*S = {T:g} new tokens)[/bold]"]
    lines.append(f"  FLOPs = T*(2*N_matmul_active + attn) = {T:g}*({fmt_si(c.matmul_flops_per_token)} + attention) "
                 f"= {fmt_si(g(s.flops))}FLOP")
    lines.append(f"  compute_s = FLOPs / (n*peak_{r.compute_dtype}) = {fmt_si(g(s.flops))} / ({n}*"
                 f"{fmt_si(r.peak_flops_per_s)}) = {fmt_seconds(g(s.compute_s))}")
    if c.moe_layers:
        t = experts_touched(T, c.num_experts, c.experts_per_tok)
        lines.append(f"  experts touched per MoE layer = E*(1-(1-k/E)^T) = {c.num_experts:g}*(1-(1-{c.experts_per_tok:g}/"
                     f"{c.num_experts:g})^{T:g}) = {t:.1f}")
    lines.append(f"  weight bytes read = {fmt_bytes(g(s.weight_bytes))}; KV read = B*kv(C) = {fmt_bytes(g(s.kv_read_bytes))};"
                 f" KV written = {fmt_bytes(g(s.kv_write_bytes))}; activations = {fmt_bytes(g(s.act_bytes))}")
    total = g(s.weight_bytes) + g(s.kv_read_bytes) + g(s.kv_write_bytes) + g(s.act_bytes)
    lines.append(f"  memory_s = bytes / (n*HBM_bw) = {fmt_bytes(total)} / ({n}*{fmt_si(r.hbm_bytes_per_s)}B/s) "
                 f"= {fmt_seconds(g(s.memory_s))}")
    lines.append(f"  step_s = max(compute_s, memory_s) + comms_s + overhead_s = {fmt_seconds(g(s.step_s))}")
    lines.append(f"  memory per chip = weights {fmt_bytes(g(s.weight_bytes_per_chip))} + KV {fmt_bytes(g(s.kv_bytes_per_chip))}"
                 f" + activations {fmt_bytes(g(s.act_bytes_per_chip))} = {fmt_bytes(g(s.memory_per_chip_bytes))} "
                 f"of {fmt_bytes(g(s.hbm_bytes))} -> {'fits' if g(s.fits) else 'DOES NOT FIT'}")
    if g(s.fits):
        lines.append(f"  tokens/s = T/step_s = {fmt_si(g(s.tokens_per_s))}; MFU = FLOPs/(step_s*n*peak) = {100 * g(s.mfu):.1f}%")
    return lines
