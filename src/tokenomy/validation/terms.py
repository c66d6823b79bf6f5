"""The named gap terms between a roofline and a real system, as pure broadcasting functions.

    achievable FLOP/s  = peak · η_max · M/(M + M_½)          M = GEMM rows (tokens in the step), M_½ fitted
    achievable HBM B/s = bw · η_hbm
    TP all-reduce      = 2 per layer of M·D·2 bytes, ring over the TP group at the scale-up level:
                         2(g−1)·α + 2(g−1)/g · bytes/(link_bw·η_link)   (tokenomy.parallel.collectives.ring)
    per-step overhead  = o_step (launches, scheduling, sampling; CUDA graphs make it roughly constant)
    per-request        = o_req on time to first token (HTTP, tokenizer, queue entry)
    training step      = [F/(n·peak_prec·η_train) + φ·F/(n·peak_bf16)]·(1 + (pp−1)/(vp·m)), φ = φ_dense or
                         φ_moe: only the GEMM part speeds up with fp8; the rest (norms, softmax, exposed comms,
                         MoE dispatch) does not; (pp−1)/(vp·m) is the 1F1B pipeline bubble, m micro-batches
The values are fitted per chip (catalog/efficiency/*.toml, calibrate_fit.py) and fed to core/roofline.step through
its existing ``eff`` and ``comms_s`` arguments (``efficiency_at``, ``tp_allreduce_s``).
"""

from __future__ import annotations

import numpy as np

from tokenomy.core.roofline import Efficiency
from tokenomy.core.collectives import ring
from tokenomy.validation.schema import EfficiencyTerms

ACT_BYTES = 2.0  # activations travel in bf16 in tensor-parallel all-reduces
ROOFLINE = EfficiencyTerms(flops_fraction_max=1.0, gemm_half_tokens=0.0, hbm_fraction=1.0, step_overhead_s=0.0,
                           allreduce_latency_s=0.0, link_fraction=1.0, request_overhead_s=0.0,
                           train_flops_fraction=1.0, train_other_dense=0.0, train_other_moe=0.0)


def flops_fraction(tokens, eta_max, half_tokens):
    """Achievable share of peak FLOP/s for GEMMs with ``tokens`` rows: η_max·M/(M + M_½)."""
    m = np.asarray(tokens, dtype=float)
    return eta_max * m / (m + half_tokens)


def gemm_time_s(flops, tokens, expert_flops_per_token, expert_rows, peak_flops_per_s, eta_max, half_tokens):
    """GEMM time at the size-dependent efficiency: dense GEMMs see all ``tokens`` rows, each routed expert only
    tokens·k/E of them (``expert_rows`` = k/E), so MoE expert GEMMs run smaller and less efficiently."""
    t = np.asarray(tokens, dtype=float)
    expert = np.minimum(t * expert_flops_per_token, flops)
    dense_eta = flops_fraction(t, eta_max, half_tokens)
    expert_eta = flops_fraction(t * expert_rows, eta_max, half_tokens)
    return ((flops - expert) / dense_eta + expert / expert_eta) / peak_flops_per_s


def tp_allreduce_s(tp, tokens, hidden, layers, link_bytes_per_s, link_fraction, latency_s):
    """Two all-reduces per layer of tokens·hidden·2 bytes over the TP group (Megatron-style TP); 0 when tp = 1."""
    nbytes = np.asarray(tokens, dtype=float) * hidden * ACT_BYTES
    return 2.0 * layers * ring(tp, nbytes, link_bytes_per_s * link_fraction, latency_s, 2.0)


def pipeline_bubble(pp, vp, microbatches):
    """Idle share added by a 1F1B (interleaved) pipeline: (pp−1)/(vp·m) (Narayanan et al. 2021)."""
    return (np.asarray(pp, dtype=float) - 1.0) / (np.asarray(vp, dtype=float) * np.asarray(microbatches, dtype=float))


def efficiency_at(t: EfficiencyTerms, tokens: float, hbm_usable_fraction: float = 1.0) -> Efficiency:
    """The engine's Efficiency for one step of ``tokens`` GEMM rows (a scalar: Efficiency holds floats)."""
    return Efficiency(flops_fraction=float(flops_fraction(tokens, t.flops_fraction_max, t.gemm_half_tokens)),
                      hbm_fraction=t.hbm_fraction, overhead_s=t.step_overhead_s,
                      hbm_usable_fraction=hbm_usable_fraction)
