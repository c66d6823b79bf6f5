"""--explain text for train and lifecycle: each formula, the numbers plugged in, and the result."""

from __future__ import annotations

import numpy as np

from tokenomy.core.memory import MEMORY_TERMS
from tokenomy.core.training import STEP_TERMS
from tokenomy.units import fmt_bytes, fmt_seconds, fmt_si


def _at(x, i: int) -> float:
    a = np.ravel(x)
    return float(a[min(i, a.size - 1)])


def explain_train(m, hw, plan, st, run, i: int) -> list[str]:
    g = lambda x: _at(x, i)  # noqa: E731
    fl, mem = st.flops, st.memory
    n, peak = g(st.chips), st.peak_flops_per_s
    v = plan.virtual_stages if plan.schedule == "interleaved" else 1
    out = [f"[bold]{m.name}: global batch {g(plan.global_batch):g} x seq {g(plan.seq_len):g} = "
           f"{fmt_si(g(st.tokens_per_step))} tokens/step on {n:g} chips[/bold]",
           f"  FLOPs/token = 6*N_active + attention ({fl.convention}) = 6*{fmt_si(g(fl.n_active))} + "
           f"{fmt_si(g(fl.attention))} = {fmt_si(g(fl.model))}FLOP  (N_active: weights a token multiplies; "
           f"total parameters set memory and gradient traffic)",
           f"  hardware FLOPs/token = model + recompute ({plan.recompute}) {fmt_si(g(fl.recompute))} = "
           f"{fmt_si(g(fl.hardware))}",
           f"  compute_s = {fmt_si(g(st.hardware_flops))} / ({n:g} * {fmt_si(peak)}FLOP/s * eta) = "
           f"{fmt_seconds(g(st.compute_s))}",
           f"  bubble = (p-1)/(v*m + p-1) = ({plan.pp}-1)/({v}*{g(st.microbatches):g} + {plan.pp}-1) = "
           f"{100 * g(st.bubble_fraction):.1f}% -> {fmt_seconds(g(st.bubble_s))}",
           f"  comms per step: TP {fmt_seconds(g(st.tp_s))}, EP {fmt_seconds(g(st.ep_s))}, "
           f"CP {fmt_seconds(g(st.cp_s))},"
           f" DP {fmt_seconds(g(st.dp_s))}, PP {fmt_seconds(g(st.pp_s))}; exposed {fmt_seconds(g(st.comm_exposed_s))}"
           f" (TP on the critical path; DP hidden under the last backward, CP under attention, EP under "
           f"--ep-overlap of the compute)",
           f"  step_s = (compute + TP + EP_exposed + CP_exposed)/(1 - bubble) + DP_exposed + PP_exposed = "
           f"{fmt_seconds(g(st.modelled_step_s))}; binding term: "
           f"{STEP_TERMS[int(g(st.bound))] if g(st.fits) else '-'}"]
    if st.mfu_given:
        out.append(f"  with the MFU given: step_s = model FLOPs / (chips * peak * MFU) = {fmt_seconds(g(st.step_s))}; "
                   f"the modelled terms match it at eta = {g(st.implied_flops_fraction):.3g} of peak in the matmuls "
                   f"(use --flops-fraction to carry that calibration to other plans)")
    out.append(f"  MFU = model FLOPs / (step_s * chips * peak) = {100 * g(st.mfu):.1f}%")
    terms = " + ".join(f"{t} {fmt_bytes(g(getattr(mem, f'{t}_bytes')))}" for t in MEMORY_TERMS)
    out.append(f"  memory/chip = {terms} = {fmt_bytes(g(mem.total_bytes))} of {fmt_bytes(g(mem.hbm_bytes))} "
               f"(activations: stored {fmt_bytes(g(mem.act_stored_bytes))}, "
               f"working {fmt_bytes(g(mem.act_working_bytes))},"
               f" logits {fmt_bytes(g(mem.logits_bytes))})")
    if run is not None:
        out.append(f"  run: {fmt_si(g(run.tokens))} tokens / {fmt_si(g(st.tokens_per_step))} per step = "
                   f"{g(run.steps):.4g} steps x {fmt_seconds(g(st.step_s))} = {g(run.time_s) / 86400:.4g} days; "
                   f"chip-hours = time x chips = {fmt_si(g(run.chip_hours))}; $ = x {hw.usd_per_chip_hour:g}/chip-h = "
                   f"${fmt_si(g(run.usd))}")
    return out


def explain_lifecycle(p, pen, target_loss, usd_flop) -> list[str]:
    return [
        f"[bold]quality target: Chinchilla loss L* = {target_loss:.4f}; D_pre(N) = (B/(L* - E - A/N^alpha))^(1/beta)"
        f"[/bold]",
        f"  chosen N_active = {fmt_si(p.n_active)} -> D_pre = {fmt_si(p.d_pre)} tokens "
        f"({p.d_pre / p.n_active:.3g} tokens/param; over-training D_pre/(20N) = {p.overtraining:.3g}x)",
        f"  C_pre = 6*N*D_pre = {fmt_si(p.flops_pre)}FLOP;  C_RL = {pen.rl_flops_factor:g}*N*D_RL*{pen.rl_penalty:g} "
        f"= {fmt_si(p.flops_rl)} (D_RL = {fmt_si(p.d_rl)});  C_inf = 2*N*D_inf*{pen.inference_penalty:g} = "
        f"{fmt_si(p.flops_inf)} (D_inf = {fmt_si(p.d_inf)})",
        f"  $ = C x ${usd_flop:.3g}/FLOP = ${fmt_si(p.usd_pre)} + ${fmt_si(p.usd_rl)} + ${fmt_si(p.usd_inf)} = "
        f"${fmt_si(p.usd_total)}; a smaller N needs more D_pre, a larger N costs more per inference token",
    ]


def explain_inverse(r, pen) -> list[str]:
    return [
        f"[bold]D_inf = rate x period = {fmt_si(r.d_inf)} tokens[/bold]",
        f"  equal costs: 6*D_pre = {pen.rl_flops_factor:g}*{pen.rl_penalty:g}*D_RL = 2*{pen.inference_penalty:g}*D_inf",
        f"  D_pre = 2*{pen.inference_penalty:g}/6 * D_inf = {fmt_si(r.d_pre)};  D_RL = 6/({pen.rl_flops_factor:g}*"
        f"{pen.rl_penalty:g}) * D_pre = {fmt_si(r.d_rl)}",
        f"  D_Chinchilla = 20*N = {fmt_si(r.d_chinchilla)};  "
        f"over-training = D_pre/D_Chinchilla = {r.overtraining:.4g}x",
    ]
