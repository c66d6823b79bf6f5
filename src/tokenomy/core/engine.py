"""THE pass engine: one pass of a lowered model on a topology, a layout and an efficiency set, vectorised.

A pass runs len_pass = S new tokens for each of B sequences over a context of C positions (cached + new), plus
optionally P prefill tokens of other requests riding in the same step (chunked prefill, mean context C_p).
Layout (core/layout.py): n = tp·ep·pp·dp; each stage holds the share f = ceil(L/pp)/L of the layers.
Per DP replica and micro-batch (M micro-batches, default pp) the busiest chip holds b = ceil(B/(dp·M)) sequences,
and with attention-DP each attention replica b_a = ceil(b/ep_eff) of them. Per stage and micro-batch:
    compute  = [F_dense / η(T_a) + F_attn / η(S·H/max(K, a)) + F_expert / η(A/x)] / peak   (η: efficiency.py,
               at rows no fewer than the GEMM's balance rows: below them it is memory-bound)
               F_dense = f·T_a·2·N_dense/a,  F_attn = f·b_a·S·attention(C)/a,  F_expert = f·L_moe·A·2·N_expert/tp
               (a GEMM's rows: tokens for weight GEMMs; per sequence the S new tokens of the H/max(K, a) query
               heads that share one KV head for attention — 128/a for MLA's one latent; per expert A/x)
    memory   = [f·W_dense/a + f·L_moe·x·N_expert·w/tp + acts] / (bw·η_hbm) + f·b_a·KV(C)/kv_split / (bw·η_kv)
    TP comm  = n_AR · all-reduce(a, T_a·D·2 bytes)   (+ batch-sharded KV all-to-all) (core/collectives.py)
    EP comm  = 2·f·L_moe · all-to-all(ep, A·D·(w_d + 2)/2/tp bytes)   (dispatch + combine, with attention-DP; w_d = 1
               + 4/128 for experts of 8 bits or fewer: FP8 dispatch with its scales, else 2; dispatch_combine_bytes;
               each level carries its copies per assignment: a prefill pass one per destination domain and rank,
               node-limited routing capping the domains, a decode pass one per expert; _ep_shares; D is the
               latent width for a latent MoE, projected down before the dispatch: ModelShape.dispatch_size)
    GPU      = max(compute, memory) + φ·min(compute, memory) + TP comm + EP comm
               − ε·hidden + (1 + ε)·f·K·κ   (ε: two-batch overlap hides up to ε of the dispatch + combine under the
               kernels, less what the share s of the SMs its kernels hold takes, by DeepEP mode: exposed_ep_s,
               hidden = min((1 − s)·EP comm, kernels) for the low-latency kernels, EP comm + kernels − max(EP comm,
               kernels/(1 − s)) for the normal ones; each micro-batch launches every kernel and streams the weights, (1 + ε)·W in
               memory, its weight GEMMs at rows T_a/(1 + ε) and A/x/(1 + ε); K the kernels the model's layers
               launch, arch/kernels.py, f·K the stage's; κ the floor a kernel costs)
    host     = o_step + o_seq·b_a   (the scheduler's CPU work; b_a the busiest scheduler's sequences: its attention
               replica's)
    stage    = GPU + host − h·min(GPU, host)   (h = 1: an overlap scheduler prepares the next step while the GPU
               runs this one, the step is max(GPU, host); h = 0: they add) — the step's critical path; overhead =
               f·K·κ + the exposed host time (φ, o_step, κ, o_seq, h, ε: efficiency.py; 0 on the roofline)
with attention(C) per token = min(absorbed, plain + un-absorb·(C−S)/S) (arch/ops.py) and EP load of the busiest
rank: A = min(max(μ + sqrt(2·μ·ln ep), μ/β), T·min(k, e)) token-expert assignments, μ = T·k/ep, e = (E + r)/ep slots
(β: the router's measured balance mean/max per rank on real traffic, EPLB's curve with redundant experts, 1 for a
model without a measurement: arch/routing.py),
of which x = min(e, μ_x + sqrt(2·σ_x²·ln ep)) distinct experts are read, μ_x = e·p, σ_x² = e·p·(1−p),
p = 1 − (1 − k/(E + r))^T (balls in bins; the max of ep ranks by the Gaussian extreme-value approximation).
Decode period (TPOT) = max(M·stage, pp·stage + pp·hop); a longer pass = (M + pp − 1)·stage + (pp − 1)·hop.
The roofline is the efficiency set ROOFLINE; the ideal even split is Layout.even_split(n): no comms, every byte
over n chips. Invalid layouts and points that do not fit get NaN times and a reason (``REASONS``, ``why_not``).
Inputs may be quantities with units (e.g. pint's) in place of numbers: the outputs then carry theirs (tests/dims;
numpy's ufuncs carry them, with no branch here; zero and NaN masks stay bare, which quantities accept; a count used
as an exponent is made a pure number, tokens/``units.TOKEN``).

The engine in modules by meaning: core/lowering.py (a pass on a layout at a context, before its batch), core/work.py
(the busiest chip's FLOPs, bytes and collectives at a batch), core/times.py (the critical path under an efficiency
set), core/pass_terms.py (what a pass costs, as the engine answers it), core/reasons.py (why a point has no time).
No fast paths: the seven that skipped a term exactly 0 over the grid or narrowed an array (plus, affine, zero_of,
first_code, fit without a mask, period of one kind of pass, an int8 bound) were each replaced by the formula they
abbreviated in benchmarks/engine_fastpaths.py (at d947c137; CPU time, medians of interleaved rounds on this
2-core machine under load): all of them together bought 1.04x / 0.91x on a dense tk.sweep decode grid, 1.05x / 1.07x
on an MoE one and 0.93x / 0.98x on tk.serve (16 concurrencies, rows built) in two runs of 7 and 9 rounds (an
earlier run, c8b40c62, had 1.23x / 1.25x on the sweeps) — none reached issue 27's 20% on a user-visible command, so the
engine computes the plain formulas (same values; tests/unit, golden, dims, serving unchanged).
"""

from __future__ import annotations

from tokenomy.core.coeffs import ModelShape
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.layout import Layout
from tokenomy.core.lowering import CacheTerms, Lowered, Pass, Precision, cache_terms, lower  # noqa: F401
from tokenomy.core.reasons import BOUNDS, FIRST_POINT_REASON, FITS_REASON, REASONS, at, why_not  # noqa: F401
from tokenomy.core.pass_terms import PassTerms
from tokenomy.core.times import (Peaks, exposed_ep_s, exposed_host_s, hbm_left_bytes, kernel_terms,  # noqa: F401
                                 over_hbm, times, usable_hbm_bytes)
from tokenomy.core.work import (FP8_DISPATCH_SHARE, Work, batched, dispatch_combine_bytes,  # noqa: F401
                                experts_touched, work)
from tokenomy.specs import Topology


def evaluate(shape: ModelShape, topo: Topology, peaks: Peaks, layout: Layout, precision: Precision, p: Pass,
             eff: Efficiency = ROOFLINE) -> PassTerms:
    """Evaluate pass ``p`` (see the module docstring): times(work(...))."""
    return times(work(shape, topo, layout, precision, p), topo, peaks, eff)
