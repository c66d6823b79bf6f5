"""Parallel plans (tensor, expert, pipeline, data) evaluated on a topology, vectorised over plans x batch x context.

A plan puts n = tp·ep·pp·dp chips to work: dp replicas, each a pipeline of pp stages, each stage g = tp·ep chips.
Per stage the largest share of layers is f = ceil(L/pp)/L. Inside a stage:
    routed experts   split over all g chips (ep ranks x tp shards of each expert)
    attention, dense attn_dp (DeepSeek's data-parallel attention with EP MoE): ep replicas of a tp-way split,
                     sequences sharded over the replicas; else one tp·ep-way tensor-parallel split
    KV cache         head-sharded over min(group, K) chips (replicated beyond K kv-heads: MQA/MLA), or
                     batch-sharded over the group (kv_batch: Pope et al. 2022 §3.3 multiquery layout)
Decode holds B/dp sequences per replica in M >= pp micro-batches of b = B/(dp·M) (lecture §2.8), so per chip
    weights = W·f/split            KV = (B/dp)·kv(C)·f/kv_split  ( = b·kv(C)/E for the lecture's E, P: P cancels)
Per stage and micro-batch, t_stage = max(compute, memory) + comms + overhead, where comms are the TP
all-reduces, the EP dispatch + combine all-to-alls and the batch-sharded attention all-to-all (collectives.py).
Decode period (TPOT) = max(M·t_stage, pp·t_stage + pp·t_hop); prefill latency = (M+pp-1)·t_stage + (pp-1)·t_hop.
Plans that are invalid or do not fit carry a reason code (``REASONS``) and NaN times.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.coeffs import ModelCoeffs, coefficients
from tokenomy.core.roofline import Efficiency, HwCoeffs, kv_positions
from tokenomy.core import collectives as col
from tokenomy.core.pipeline import rack_hop_ratio
from tokenomy.parallel.topology import Topology
from tokenomy.units import fmt_bytes

BOUNDS = ("compute", "memory", "comms", "overhead", "pipeline hop")
REASONS = ("", "ep > 1 needs an MoE model", "ep does not divide the routed experts",
           "the attention group (tp, or tp*ep without attn_dp) does not divide the attention heads",
           "pp exceeds the number of layers", "batch smaller than dp x micro-batches (under 1 sequence each)",
           "fewer decode micro-batches than pipeline stages (stages idle)", "does not fit in HBM")


@dataclass(frozen=True)
class ModelShape:
    """What a layout needs beyond the roofline coefficients."""

    name: str
    coeffs: ModelCoeffs
    hidden_size: int  # D
    num_layers: int  # L
    num_heads: int  # H (query heads)
    kv_heads: int  # distinct K/V heads a head-split can spread: 1 for MQA and MLA (one shared latent)
    head_dim: int
    parallel_block: bool  # attention and MLP outputs reduced together (one all-reduce per layer)
    dense_flops_per_token: float  # 2·(dense + head) params: the part attention-DP replicates


def shape_of(m: ModelArch, coeffs: ModelCoeffs | None = None) -> ModelShape:
    c = coeffs or coefficients(m)
    a = m.layers[0].attention
    return ModelShape(m.name, c, m.hidden_size, m.num_layers, a.num_heads, 1 if a.kind == "mla" else a.num_kv_heads,
                      a.head_dim, m.parallel_block, 2.0 * (float(c.dense_params) + float(c.head_params)))


@dataclass(frozen=True)
class Plans:
    """Degrees of parallelism (ints or arrays that broadcast). attn_dp defaults to ep > 1."""

    tp: object = 1
    ep: object = 1
    pp: object = 1
    dp: object = 1
    attn_dp: object = None
    kv_batch: object = False
    microbatches: object = None  # default: pp (the lecture's minimum with no idle stage)

    @property
    def chips(self):
        return np.asarray(self.tp) * np.asarray(self.ep) * np.asarray(self.pp) * np.asarray(self.dp)

    def at(self, shape: tuple[int, ...], i: int) -> "Plans":
        """The scalar plan at flat index ``i`` of a result of ``shape``."""
        def one(name):
            v = getattr(self, name)
            return None if v is None else np.ravel(np.broadcast_to(np.asarray(v), shape))[i].item()
        return Plans(*(one(f.name) for f in fields(self)))

    def label(self) -> str:
        """'tp8 ep1 pp1 dp1' (+ attn-dp/attn-tp when ep > 1, + kv-batch) for a scalar plan."""
        ep = int(self.ep)
        s = f"tp{int(self.tp)} ep{ep} pp{int(self.pp)} dp{int(self.dp)}"
        if ep > 1:
            s += " attn-tp" if self.attn_dp is False else " attn-dp"
        return s + (" kv-batch" if self.kv_batch else "")


@dataclass(frozen=True)
class PlanResult:
    """Arrays over plans x batch x context. Times per pass in seconds; NaN where ``reason`` != 0."""

    chips: object
    batch: object
    context: object
    len_pass: object
    micro_batch: object  # sequences per micro-batch
    flops: object  # whole pass, all chips
    compute_s: object  # per stage and micro-batch
    memory_s: object
    tp_comm_s: object
    ep_comm_s: object
    comms_s: object
    overhead_s: object
    stage_s: object
    hop_s: object  # one pipeline hop
    hops: object  # hops per pass
    step_s: object  # TPOT in decode; the whole pass in prefill
    tokens_per_s: object
    tokens_per_s_per_chip: object
    tokens_per_s_per_user: object
    mfu: object
    weight_bytes_per_chip: object
    kv_bytes_per_chip: object
    act_bytes_per_chip: object
    memory_per_chip_bytes: object
    hbm_bytes: object
    rack_hop_ratio: object  # scale-up EP time / scale-out hop time per stage (lecture §2.8, need >= 1)
    bound: object  # index into BOUNDS
    reason: object  # index into REASONS; 0 = valid and fits

    @property
    def ok(self):
        return np.asarray(self.reason) == 0


def evaluate(shape: ModelShape, topo: Topology, hw: HwCoeffs, plans: Plans, batch, context, len_pass=1, *,
             weight_bytes_per_param=None, kv_bytes_per_elem=2.0, act_bytes_per_elem=2.0,
             eff: Efficiency = Efficiency(), hop_latency_s=None) -> PlanResult:
    """Evaluate ``plans`` (arrays broadcast against batch, context, len_pass) on ``topo``; see module doc.

    Everything that depends on the plan alone (splits, collective alpha/beta terms) is computed on the plans'
    own shape first, so the plan x batch grid costs a few dozen array operations per point."""
    m, f64 = shape.coeffs, np.float64
    tp, ep, pp, dp = (np.asarray(x, dtype=f64) for x in (plans.tp, plans.ep, plans.pp, plans.dp))
    B, C, S = (np.asarray(x, dtype=f64) for x in (batch, context, len_pass))
    M = pp if plans.microbatches is None else np.asarray(plans.microbatches, dtype=f64)
    ad = (ep > 1) if plans.attn_dp is None else (np.asarray(plans.attn_dp, dtype=bool) & (ep > 1))
    kvb_mode = np.asarray(plans.kv_batch, dtype=bool)
    wd, we, wx = ((m.dense_w, m.embed_w, m.expert_w) if weight_bytes_per_param is None
                  else (weight_bytes_per_param,) * 3)
    L, D, ab, kvb = float(shape.num_layers), float(shape.hidden_size), act_bytes_per_elem, kv_bytes_per_elem
    moe, k = float(m.moe_layers), float(m.experts_per_tok)

    # plan-shaped: splits, stage share, collective terms
    g, n = tp * ep, tp * ep * pp * dp
    f = np.maximum(np.ceil(L / pp), 1.0) / L  # largest stage's share of the layers
    a = np.where(ad, tp, g)  # attention tensor-parallel group
    kvs = np.minimum(a, shape.kv_heads)
    ar = col.all_reduce_cost(topo, a)
    n_ar = f * (L + (moe if shape.parallel_block else L))  # attention (+ MLP unless fused) reductions per stage
    (qa1, qb1), (qa2, qb2) = col.all_to_all_cost(topo, a).pieces
    (ea1, eb1), (ea2, eb2) = col.all_to_all_cost(topo, ep, stride=tp).pieces
    on_q, on_e = np.where(kvb_mode, f * L, 0.0), np.where(ad, 2.0 * f * moe, 0.0)
    q_bytes = 2.0 * shape.num_heads * shape.head_dim * ab / a  # per attention token: Q in, output back
    e_bytes = k * D * ab / g  # per micro-batch token: its k copies, spread over the stage
    crosses = pp * g > topo.domain_size
    up, out = topo.scale_up, topo.scale_out
    hop_a = np.where(crosses, out.latency_s, up.latency_s) if hop_latency_s is None else float(hop_latency_s)
    hop_a = np.where(pp > 1, hop_a, 0.0)
    hop_b = np.where(pp > 1, D * ab / g / np.where(crosses, out.bytes_per_s, up.bytes_per_s), 0.0)
    w_chip = f * ((m.capacity_dense_params * wd + m.capacity_embed_params * we) / a + m.capacity_expert_params * wx / g)
    w_read = f * (m.dense_params * wd + m.head_params * we) / a
    E = float(m.num_experts)
    struct = np.select([(ep > 1) & (moe == 0), np.mod(E, ep) != 0, np.mod(shape.num_heads, a) != 0, pp > L],
                       [1, 2, 3, 4], 0)

    # context-shaped: FLOPs and KV per token and sequence
    decode = S <= 1.0
    c_avg = C - (S - 1.0) / 2.0
    attn_tok = (np.where(decode, m.score_global_decode, m.score_global_prefill) * c_avg
                + np.where(decode, m.score_local_decode, m.score_local_prefill) * np.minimum(c_avg, m.window))
    dense_ftok = shape.dense_flops_per_token + attn_tok
    exp_ftok = m.matmul_flops_per_token - shape.dense_flops_per_token
    kv_pos = kv_positions(m, C, C) * kvb
    kv_seq = kv_pos + S * (m.kv_global + m.kv_local) * kvb  # read + written per sequence per pass

    # the grid: per stage and micro-batch of b sequences (T tokens)
    b = B / (dp * M)
    T = b * S
    ep_eff = np.where(ad, np.minimum(ep, np.maximum(b, 1.0)), 1.0)  # attention replicas that hold a sequence
    kv_split = ep_eff * np.where(kvb_mode, np.maximum(kvs, np.minimum(a, np.maximum(b / ep_eff, 1.0))), kvs)
    compute_s = T * (f * dense_ftok / a / ep_eff + f * exp_ftok / g) / (hw.peak_flops_per_s * eff.flops_fraction)
    mem_bytes = w_read + b * (f * kv_seq) / kv_split + T * (f * m.act_elems_per_token * ab / g)
    if moe:  # distinct experts read: E·(1 - (1 - k/E)^T)
        mem_bytes = mem_bytes + (f * moe * E * m.expert_params * wx / g) * -np.expm1(T * np.log1p(-k / E))
    memory_s = mem_bytes / (hw.hbm_bytes_per_s * eff.hbm_fraction)
    tok_a = T / ep_eff
    tp_comm = n_ar * ar(tok_a * D * ab)
    x = tok_a * q_bytes
    tp_comm = tp_comm + on_q * np.maximum(qa1 + qb1 * x, qa2 + qb2 * x)
    x = T * e_bytes
    ep_comm = on_e * np.maximum(ea1 + eb1 * x, ea2 + eb2 * x)
    kv_chip = (f * B / dp) * kv_pos / kv_split
    act_chip = T * (m.act_peak_elems_per_token * ab / g)
    mem_chip = w_chip + kv_chip + act_chip
    hbm = hw.hbm_bytes * eff.hbm_usable_fraction
    reason = np.where(struct != 0, struct, np.where(b < 1.0, 5, np.where(decode & (M < pp), 6,
                                                                         np.where(mem_chip > hbm, 7, 0))))
    nan = np.where(reason == 0, 0.0, np.nan)  # added to every time: NaN where invalid or not fitting
    compute_s, memory_s, tp_comm, ep_comm = compute_s + nan, memory_s + nan, tp_comm + nan, ep_comm + nan
    comms_s = tp_comm + ep_comm
    stage_s = np.maximum(compute_s, memory_s) + comms_s + eff.overhead_s
    hop_s = hop_a + hop_b * T + nan
    hops = np.where(pp > 1, np.where(decode, pp, pp - 1.0), 0.0)
    hop_total = hops * hop_s
    period = np.where(decode, np.maximum(M * stage_s, pp * stage_s + hop_total), (M + pp - 1.0) * stage_s + hop_total)
    flops = B * S * (dense_ftok + exp_ftok)
    rate = B * S / period
    bound = np.where(compute_s >= memory_s, 0, 1)
    top = np.maximum(compute_s, memory_s)
    for i, t in ((2, comms_s), (3, eff.overhead_s), (4, hop_total / pp)):
        bound = np.where(t > top, i, bound)
        top = np.maximum(top, t)
    return PlanResult(
        chips=n, batch=B, context=C, len_pass=S, micro_batch=b, flops=flops, compute_s=compute_s,
        memory_s=memory_s, tp_comm_s=tp_comm, ep_comm_s=ep_comm, comms_s=comms_s,
        overhead_s=eff.overhead_s + nan, stage_s=stage_s, hop_s=hop_s, hops=hops, step_s=period, tokens_per_s=rate,
        tokens_per_s_per_chip=rate / n, tokens_per_s_per_user=S / period,
        mfu=flops / (period * n * hw.peak_flops_per_s), weight_bytes_per_chip=w_chip, kv_bytes_per_chip=kv_chip,
        act_bytes_per_chip=act_chip, memory_per_chip_bytes=mem_chip, hbm_bytes=hbm,
        rack_hop_ratio=rack_hop_ratio(k, np.ceil(f * moe), up.bytes_per_s, out.bytes_per_s), bound=bound,
        reason=reason)


def at(x, i: int) -> float:
    """Element ``i`` of ``x`` broadcast to the result's shape (flat index)."""
    return float(np.ravel(x)[i]) if np.size(x) > 1 else float(np.ravel(x)[0])


def why_not(r: PlanResult, plans: Plans, i: int) -> str | None:
    """One sentence on why point ``i`` (flat index over the result's shape) is invalid or does not fit; None if ok."""
    shape = np.shape(r.reason)
    g = lambda x: at(np.broadcast_to(x, shape), i)  # noqa: E731
    code = int(g(r.reason))
    if code == 0:
        return None
    if code == 7:
        return (f"needs {fmt_bytes(g(r.memory_per_chip_bytes))} per chip (weights {fmt_bytes(g(r.weight_bytes_per_chip))}"
                f" + KV {fmt_bytes(g(r.kv_bytes_per_chip))} + activations {fmt_bytes(g(r.act_bytes_per_chip))}) > "
                f"{fmt_bytes(g(r.hbm_bytes))} usable HBM")
    p = plans.at(shape, i)
    return f"{REASONS[code]} ({p.label()}, batch {g(r.batch):g})"
