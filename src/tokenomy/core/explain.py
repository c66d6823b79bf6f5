"""The derivation of one engine pass, for --explain and the web's explain panel: the engine's terms formatted.

Formatting only: every number printed is a field of ``engine.PassTerms`` (the formulas are core/engine.py's).
"""

from __future__ import annotations

import numpy as np

from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.units import fmt_bytes, fmt_seconds, fmt_si



def _first(x) -> float:
    return float(np.ravel(np.asarray(x, float))[0])  # a deployment's set holds scalars


def efficiency_terms(dep: Deployment) -> str:
    """The efficiency set's terms as the pass uses them (core/efficiency.py), one line: eta_max (x rho where the
    compute dtype has 8 bits or fewer), eta_hbm, eta_kv, the per-layer floor, the per-step overhead, the
    all-reduce latency, and the engine's host and EP overlap (h, ε; under ε the SMs its kernels hold)."""
    e = dep.eff
    eta = f"eta_max {_first(e.flops_fraction):.3g}"
    pk = dep.peaks
    if bool(np.any(pk.narrow)):
        eta += f" x rho {_first(e.narrow_flops_ratio):.3g} ({dep.compute[0]})"
    if pk.attn_flops_per_s is not None and _first(pk.attn_flops_per_s) != _first(pk.flops_per_s):
        eta += f"; attention at the {dep.kv_dtype} KV cache's peak {fmt_si(_first(pk.attn_flops_per_s))}FLOP/s"
    ar = "the link's" if e.allreduce_latency_s is None else fmt_seconds(_first(e.allreduce_latency_s))
    return (f"{e.name} ({e.terms_from or 'given'}): {eta}, eta_hbm {_first(e.hbm_fraction):.3g}, eta_kv "
            f"{_first(e.kv_fraction):.3g}, kappa (per kernel) {fmt_seconds(_first(e.kernel_overhead_s))}, o_step "
            f"{fmt_seconds(_first(e.overhead_s))}, o_seq {fmt_seconds(_first(e.sequence_overhead_s))}, alpha_AR {ar}, "
            f"host overlap h {_first(e.host_overlap):g}, EP overlap eps {_first(e.ep_overlap):g}{_sm_shares(e)}")


def _sm_shares(e) -> str:
    """Under two-batch overlap, the SMs its dispatch/combine kernels hold (s_n, s_ll: core/engine.exposed_ep_s)."""
    if not _first(e.ep_overlap):
        return ""
    return f" (SMs held: normal {_first(e.ep_sm_normal):.3g}, low-latency {_first(e.ep_sm_low_latency):.3g})"

def explain_pass(dep: Deployment, r: engine.PassTerms, bound: engine.PassTerms | None, i: int) -> list[str]:
    """Point ``i`` (flat) of ``r`` (``dep``'s efficiency set) as formula = numbers = value, with the roofline
    ``bound`` (the same layout at ideal efficiencies) beside it when given."""
    shape = r.shape
    g = lambda x: engine.at(x, shape, i)  # noqa: E731
    B, C, S = g(r.batch), g(r.context), g(r.len_pass)
    dtype, peak = dep.compute
    eff = dep.eff
    lines = [f"[bold]{dep.label()}: batch B={B:g}, context C={C:g}, len_pass S={S:g}; {eff.name} efficiency, "
             f"compute {dtype}[/bold]",
             f"  FLOPs of the pass (all chips) = {fmt_si(g(r.flops))}FLOP, of which attention {fmt_si(g(r.attention_flops))}"
             f"FLOP; busiest chip of a stage holds {g(r.micro_batch):g} sequences per micro-batch"]
    why = engine.why_not(r, dep.layout, i)
    mem = (f"  memory per chip = weights {fmt_bytes(g(r.weight_bytes_per_chip))} + KV {fmt_bytes(g(r.kv_bytes_per_chip))}"
           f" + activations {fmt_bytes(g(r.act_bytes_per_chip))} = {fmt_bytes(g(r.memory_per_chip_bytes))} of "
           f"{fmt_bytes(g(r.hbm_bytes))} usable")
    if why:
        return lines + [mem, f"  [red]no answer: {why}[/red]"]
    lines += [
        f"  terms: {efficiency_terms(dep)}",
        f"  compute_s = FLOPs per chip / (peak {fmt_si(peak)}FLOP/s x eta_max [x rho], less at few GEMM rows) = "
        f"{fmt_seconds(g(r.compute_s))}",
        f"  memory_s = weights and activations / (HBM {fmt_si(dep.peaks.hbm_bytes_per_s)}B/s x eta_hbm) + KV / (HBM x "
        f"eta_kv) = weights "
        f"{fmt_seconds(g(r.weights_read_s))} + KV {fmt_seconds(g(r.kv_s))} + activations {fmt_seconds(g(r.act_s))} = "
        f"{fmt_seconds(g(r.memory_s))}",
        f"  comms_s = TP {fmt_seconds(g(r.tp_comm_s))} + EP {fmt_seconds(g(r.ep_comm_s))}; overhead_s = "
        f"{fmt_seconds(g(r.overhead_s))}",
        f"  stage = GPU + host - h*min(GPU, host) (GPU = max(compute, memory) + phi*min + comms + the kernels' floor; "
        f"overhead = the floor + the exposed host time) = {fmt_seconds(g(r.stage_s))}; "
        f"{'TPOT' if S <= 1 else 'pass'} = {fmt_seconds(g(r.step_s))} (pipeline hops {g(r.hops):g} x "
        f"{fmt_seconds(g(r.hop_s))}); binding: {engine.BOUNDS[int(g(r.bound))]}",
        mem,
        f"  tokens/s = B*S/step = {fmt_si(g(r.tokens_per_s))} ({g(r.tokens_per_s_per_chip):.4g} per chip, "
        f"{g(r.tokens_per_s_per_user):.4g} per user); MFU = FLOPs/(step*n*peak) = {100 * g(r.mfu):.1f}%"]
    if bound is not None and engine.at(bound.reason, bound.shape, i) == 0:
        lines.append(f"  roofline bound (same layout, ideal efficiencies): {fmt_seconds(engine.at(bound.step_s, bound.shape, i))}"
                     f", bound by {engine.BOUNDS[int(engine.at(bound.bound, bound.shape, i))]}")
    return lines
