"""What a pass asks of the busiest chip of a stage, per micro-batch, before any efficiency (the pass engine's work,
core/engine.py): a lowered pass (core/lowering.py) at its batch.

    sequences   b = ceil(B/(dp·M)) per micro-batch; with attention-DP b_a = ceil(b/ep_eff) per attention replica
    tokens      T = b·S + P/(dp·M) per micro-batch (T_a the attention replica's)
    FLOPs       F_dense = f·T_a·2·N_dense/a,  F_attn = f·b_a·S·attention(C)/a,  F_expert = f·L_moe·A·2·N_expert/tp
    depth       Σ_j F_j/K_j over the weight GEMMs at the depth K_j each runs on its rank: f·T_a·2·(W_d/a + S_d) and
                f·L_moe·A·2·(W_e/tp + S_e) (W, S: weights per depth element of the column- and row-parallel GEMMs,
                arch/gemm_depth.py; a row-parallel GEMM's K is split by the TP group, so its F_j/K_j is not)
    bytes       weights f·W/a + f·L_moe·x·N_expert·w/tp; KV f·b_a·KV(C)/kv_split; activations T·f·acts/g
    collectives n_AR all-reduces of T_a·D·w_act over a; 2·f·L_moe EP all-to-alls of A·D·(w_d + w_act)/2/tp
    experts     A = min(max(μ + sqrt(2·μ·ln ep), μ/β), T·min(k, e)) assignments (β: the router's measured balance,
                arch/routing.py), x distinct experts read (``_expert_load``)
Efficiency-free: a grid is lowered once and timed under many efficiency sets (core/times.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy import units
from tokenomy.core import efficiency
from tokenomy.core.coeffs import ModelShape
from tokenomy.core.layout import Layout
from tokenomy.core.lowering import Lowered, Pass, Precision, lower
from tokenomy.specs import Topology
from tokenomy.units import floats

_f = floats  # float arrays (a quantity keeps its units)

@dataclass(frozen=True)
class Work:
    """What a pass asks of the busiest chip of a stage, per micro-batch, before any efficiency is applied.

    Efficiency-independent, so a grid of passes is lowered once and timed under many efficiency sets (the fit in
    tokenomy.validation does exactly that). Quantities that scale with interleaved prefill tokens are linear in
    them for dense models (a step with P extra tokens is ``work(P=0) + P·work_per_prefill_token`` field by field);
    for MoE models the experts read and their rows are not linear in the step's tokens."""

    n: object  # chips
    batch: object
    context: object
    len_pass: object
    micro_batch: object
    pp: object
    stage_kernels: object  # f·K: kernels the largest stage's layers launch (arch/kernels.py)
    microbatches: object
    decode: object
    flops: object  # model FLOPs of the whole pass, all chips
    attention_flops: object
    dense_flops: object  # per chip: dense weight GEMMs of the busiest attention replica (+ prefill-chunk attention)
    dense_rows: object  # GEMM rows (tokens) of those GEMMs
    attn_flops: object  # per chip: q·k and p·v of the batch's sequences
    attn_rows: object  # rows of one attention matmul: new tokens x query heads sharing a KV head
    dense_w: object  # bytes per streamed operand element of those GEMMs (their balance rows, efficiency.py)
    expert_w: object
    kv_w: object
    expert_flops: object  # per chip: routed experts of the busiest EP rank
    expert_rows: object  # GEMM rows per routed expert there
    dense_flops_per_k: object  # Σ F_j/K_j of the dense weight GEMMs on that chip: FLOPs per element of K-loop depth
    expert_flops_per_k: object  # ... of the routed experts (core/times.py charges each K-loop its fill)
    experts_read: object  # distinct routed experts read per MoE layer there
    weight_bytes: object  # read per micro-batch
    kv_bytes: object  # KV read + written
    act_bytes: object
    ar_group: object  # TP all-reduce group and what it carries
    ar_count: object
    ar_bytes: object
    q_count: object  # batch-sharded-KV all-to-alls (Q out, attention output back)
    q_bytes: object
    ep_group: object
    ep_stride: object
    ep_count: object  # dispatch + combine all-to-alls per stage (attention-DP with EP)
    ep_bytes: object  # what the busiest rank's token-expert assignments carry per all-to-all
    ep_low_latency: object  # DeepEP's low-latency kernels (bool), else its normal kernels (_ep_shares)
    ep_up_share: object  # link copies per assignment on scale-up and on scale-out (_ep_shares)
    ep_out_share: object
    host_seqs: object  # sequences the busiest scheduler (attention replica) runs per micro-batch: o_seq's count
    hop_s: object  # one pipeline hop (link alpha-beta; no efficiency applies)
    weight_bytes_per_chip: object  # resident
    kv_bytes_per_chip: object
    act_bytes_per_chip: object
    ideal: object
    structure: object  # reason code from the layout and batch alone (0: valid)
    rack_hop_ratio: object


def work(shape: ModelShape, topo: Topology, layout: Layout, precision: Precision, p: Pass) -> Work:
    """Lower pass ``p`` on a layout to the busiest chip's FLOPs, bytes and collectives (module docstring)."""
    return batched(lower(shape, topo, layout, precision, p), p.batch, p.prefill_tokens, p.prefill_chunk)


def batched(lo: Lowered, batch, prefill_tokens=0.0, prefill_chunk=None) -> Work:
    """``work`` of a lowered pass at ``batch`` sequences (+ ``prefill_tokens`` interleaved prefill tokens): the
    busiest chip of a stage, per micro-batch (module docstring). Terms that are exactly 0 or 1 on this layout and
    model (no attention-DP, no KV batch split, no routed experts, no prefill) are not formed over the grid.
    ``prefill_chunk``: the tokens of one prompt chunk. A chunk is one prompt's: it rides in one pipeline micro-batch
    and stays on one attention rank, so the busiest micro-batch holds max(P/(dp·M), min(P/dp, chunk)) and, under
    attention-DP, the busiest rank max(p/ep, min(p, chunk)) of that (one 8,000-token prompt: all of it, not 8000/M
    or 8000/ep); None spreads P over the micro-batches and the ranks the decodes use, as the tokens of many prompts
    do."""
    shape, lay, pr = lo.shape, lo.layout, lo.precision
    m = shape.coeffs
    tp, ep, pp, dp, M, ad, f, a, g = lo.tp, lo.ep, lo.pp, lo.dp, lo.microbatches, lo.attn_dp, lo.stage_share, \
        lo.attn_group, lo.group
    B, S = _f(batch), lo.len_pass
    P = _f(prefill_tokens) + 0.0 * units.TOKEN  # in tokens (the default 0 has no unit)
    ab = _f(pr.act)
    L, D, moe = _f(shape.num_layers), _f(shape.hidden_size), _f(m.moe_layers)
    dense_ftok, attn_tok, attn_pf = shape.dense_flops_per_token, lo.attn_flops_per_token, \
        lo.chunk_attn_flops_per_token

    b = np.ceil(B / (dp * M))
    p_mb = P / (dp * M)  # prefill tokens per micro-batch
    if prefill_chunk is not None:  # a prompt's chunk rides in one micro-batch: the busiest holds at least one
        p_mb = np.maximum(p_mb, np.minimum(P / dp, _f(prefill_chunk)))
    per_rank = np.ceil(B / dp)  # sequences per DP replica, and per attention replica with attention-DP
    if np.any(ad):
        ep_eff = np.where(ad, np.minimum(ep, np.maximum(b, 1.0)), 1.0)
        p_a = p_mb / ep_eff if prefill_chunk is None else \
            np.where(ad, np.maximum(p_mb / ep, np.minimum(p_mb, _f(prefill_chunk))), p_mb)
        b_a = np.ceil(b / ep_eff)  # the busiest attention replica's sequences (and p_a its prefill tokens)
        per_rank = np.ceil(per_rank / np.where(ad, ep, 1.0))
    else:  # ep_eff = 1: ceil(b/1) = b, p_mb/1 = p_mb
        b_a, p_a = b, p_mb
    T = b * S + p_mb
    T_a = T if b_a is b else b_a * S + p_a  # without attention-DP the attention replica is the stage's chip
    kvs, kv_batch = lo.kv_split_heads, np.asarray(lay.kv_batch, dtype=bool)
    kv_split = np.where(kv_batch, np.maximum(kvs, np.minimum(a, np.maximum(b_a, 1.0))), kvs) if np.any(kv_batch) \
        else kvs
    A, x_read, expert_flops, expert_rows, expert_bytes, ep_bytes = _routed(lo, T)
    gemm = efficiency.FLOPS_PER_WEIGHT * f  # per weight per token, of this stage
    # the first reason that holds (core/reasons.py: 6 a fraction of a sequence, 7 under one a replica and
    # micro-batch, 8 decode stages idle), over the grid
    conds = [lo.layout_code != 0, B != np.round(B), B < dp * M, lo.decode & (M < pp)]
    grid = np.broadcast_shapes(*(np.shape(c) for c in conds), np.shape(lo.layout_code))
    structure = np.select([np.broadcast_to(c, grid) for c in conds], [lo.layout_code, 6, 7, 8], 0)
    return Work(
        n=lo.chips, batch=B, context=lo.context, len_pass=S, micro_batch=b, pp=pp, stage_kernels=f * m.kernels,
        microbatches=M, decode=lo.decode,
        # (the per-point factors multiply the grid once: scalars and layout columns are folded first)
        flops=B * (S * (m.matmul_flops_per_token + attn_tok)) + P * (m.matmul_flops_per_token + attn_pf),
        attention_flops=B * (S * attn_tok),
        dense_flops=b_a * (S * dense_ftok * (f / a)) + p_a * ((dense_ftok + attn_pf) * (f / a)),
        dense_rows=T_a, attn_flops=b_a * (f * S * attn_tok / a),
        attn_rows=S * shape.num_heads / np.maximum(_f(shape.kv_heads), a),
        # (the operand widths and the kernel count stay the deployment's numbers, not spread over the grid: the
        # balance rows they give broadcast against the rows; validation/work_table stacks them to its grid)
        dense_w=_f(pr.dense_w), expert_w=_f(pr.expert_w), kv_w=_f(pr.kv),
        expert_flops=expert_flops, expert_rows=expert_rows, experts_read=x_read,
        dense_flops_per_k=(b_a * S + p_a) * (gemm * (m.dense_depth_whole / a + m.dense_depth_split)),
        expert_flops_per_k=A * (gemm * moe * (m.expert_depth_whole / tp + m.expert_depth_split)),
        weight_bytes=f * (m.dense_params * pr.dense_w + m.head_params * pr.embed_w) / a + expert_bytes,
        kv_bytes=b_a * (lo.kv_bytes_per_seq * (f / kv_split)) + p_a * (lo.chunk_kv_bytes_per_token * (f / kv_split)),
        act_bytes=T * (f * m.act_elems_per_token * ab / g),
        ar_group=np.where(lo.ideal, 1.0, a), ar_count=f * (L + np.where(shape.parallel_block, moe, L)),
        ar_bytes=T_a * (D * ab), q_count=np.where(kv_batch, f * L, 0.0),
        q_bytes=T_a * (2.0 * shape.num_heads * shape.head_dim * ab / a),
        ep_group=np.where(lo.ideal, 1.0, ep), ep_stride=tp, ep_count=np.where(ad, 2.0 * f * moe, 0.0),
        ep_bytes=ep_bytes, ep_low_latency=lo.ep_low_latency, ep_up_share=lo.ep_shares[0],
        ep_out_share=lo.ep_shares[1], host_seqs=b_a, hop_s=lo.hop_latency_s + lo.hop_s_per_token * T,
        weight_bytes_per_chip=lo.weight_bytes_per_chip, kv_bytes_per_chip=f * per_rank * lo.cached_bytes_per_seq
        / kv_split, act_bytes_per_chip=T * (m.act_peak_elems_per_token * ab / g), ideal=lo.ideal,
        structure=structure, rack_hop_ratio=lo.rack_hop_ratio)


def _routed(lo: Lowered, T):
    """(A, x, expert FLOPs, expert rows, expert bytes read, EP all-to-all bytes) of the routed experts on the busiest
    EP rank at T tokens per micro-batch (module docstring). A model without MoE layers has none: zeros (rows 1),
    not formed."""
    m, pr, f, tp = lo.shape.coeffs, lo.precision, lo.stage_share, lo.tp
    k, moe = _f(m.experts_per_tok), _f(m.moe_layers)
    # a latent MoE dispatches its tokens projected down (ModelShape.dispatch_size): the all-to-all moves that width
    D, ab = _f(lo.shape.dispatch_size or lo.shape.hidden_size), _f(pr.act)
    if not np.any(moe > 0):
        zero = np.zeros(np.shape(T))
        return zero, zero, zero, np.ones(np.shape(T)), 0.0, zero
    A, x_read = _expert_load(T, k, lo.slots, lo.slots_per_rank, lo.ep, moe, lo.expert_balance)
    return (A, x_read, f * moe * A * efficiency.FLOPS_PER_WEIGHT * m.expert_params / tp,
            np.where(x_read > 0, A / np.maximum(x_read, 1e-30), units.TOKEN),
            f * moe * x_read * m.expert_params * pr.expert_w / tp, A * D * dispatch_combine_bytes(pr) / 2.0 / tp)


FP8_DISPATCH_SHARE = (1.0 + 4.0 / 128.0) / 2.0  # of a 16-bit element: FP8 + a float32 scale per 128 channels


def dispatch_combine_bytes(pr: Precision):
    """Bytes per hidden element a token-expert assignment moves in its dispatch and its combine together:
    w_dispatch + w_act. Experts whose weights have 8 bits or fewer take 8-bit activations, quantized before the
    dispatch, so it moves FP8 with a float32 scale per 128 channels; the combine returns the expert's output in
    16 bits (DeepEP README: low-latency dispatch in FP8, combine in BF16; DeepSeek-V3 report §3.3.2)."""
    return _f(pr.act) * (np.where(pr.narrow_experts, FP8_DISPATCH_SHARE, 1.0) + 1.0)


def experts_touched(tokens, num_experts, experts_per_tok):
    """Expected distinct experts one MoE layer reads when ``tokens`` tokens each pick k of E uniformly:
    E·(1 − (1 − k/E)^T). T=1 gives k; T→∞ gives E. (Balls-in-bins; real routers are less uniform.)"""
    E = np.maximum(_f(num_experts), 1.0)
    return E * -np.expm1(_f(tokens / units.TOKEN) * np.log1p(-np.minimum(experts_per_tok / E, 1.0 - 1e-12)))


def _busiest(x, ranks):
    """The busiest of ``ranks`` ranks for a count with mean ``x`` and variance ``x`` (Gaussian extreme value;
    a count's variance is its mean times one of its unit)."""
    return x + np.sqrt(2.0 * x * units.TOKEN * np.log(np.maximum(ranks, 1.0)))


def _expert_load(T, k, slots, e_rank, ep, moe, balance=1.0):
    """(A, x): token-expert assignments and distinct experts read on the busiest EP rank (module docstring). The
    busiest rank carries the larger of the balls-in-bins extreme and the router's measured skew μ/β (β = mean/max
    assignments per rank on real traffic, arch/routing.py: LMSYS measured DeepSeek-V3 at β 0.80 on 32 ranks with
    EPLB, 0.55 without; balls in bins gives 0.99 at a prefill's 16,384 tokens a rank): the measured β holds the
    fluctuation of its own batches, the Gaussian extreme the one of a small batch."""
    mu = T * k / ep
    A = np.where(moe > 0, np.minimum(np.maximum(_busiest(mu, ep), mu / balance), T * np.minimum(k, e_rank)), 0.0)
    p_touch = np.where(moe > 0, experts_touched(T, slots, k) / np.maximum(slots, 1.0), 0.0)  # per expert slot
    mu_x = e_rank * p_touch
    x = np.clip(mu_x + np.sqrt(2.0 * mu_x * (1.0 - p_touch) * np.log(np.maximum(ep, 1.0))), mu_x, e_rank)
    return A, np.where(moe > 0, x, 0.0)
