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
rank: A = min(μ + sqrt(2·μ·ln ep), T·min(k, e)) token-expert assignments, μ = T·k/ep, e = (E + r)/ep slots,
of which x = min(e, μ_x + sqrt(2·σ_x²·ln ep)) distinct experts are read, μ_x = e·p, σ_x² = e·p·(1−p),
p = 1 − (1 − k/(E + r))^T (balls in bins; the max of ep ranks by the Gaussian extreme-value approximation).
Decode period (TPOT) = max(M·stage, pp·stage + pp·hop); a longer pass = (M + pp − 1)·stage + (pp − 1)·hop.
The roofline is the efficiency set ROOFLINE; the ideal even split is Layout.even_split(n): no comms, every byte
over n chips. Invalid layouts and points that do not fit get NaN times and a reason (``REASONS``, ``why_not``).
Inputs may be quantities with units (e.g. pint's) in place of numbers: the outputs then carry theirs (tests/dims;
zero and NaN masks stay bare, which quantities accept; counts used as exponents are stripped, ``_mag``).

Fast paths (benchmarks/engine_fastpaths.py: each replaced by the formula it abbreviates, CPU time of tk.sweep on a
dense and an MoE decode grid of 3.1 M and 0.5 M points, median of 7 interleaved rounds): a term that is exactly 0
over the whole grid, or a layout column that is constant, is not formed over the grid — ``_plus`` (1.01-1.08x),
``_affine`` (1.03-1.09x), ``_zero_of`` (1.04-1.07x), ``_first_code`` (1.01-1.14x), ``_fit`` without a mask
(1.03x), ``_period`` of one kind of pass (1.02x), the int8 ``_bound`` (1.03x); all of them together 1.23x (dense)
and 1.25x (MoE). None reaches 20% alone; they are kept together for that figure, and the three that bought
nothing measurable (a mask-free broadcast view, multiplying by an exact 1, the overlap terms at 0) were removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from tokenomy.arch.positions import attended, cached, indexed
from tokenomy.core import collectives as col
from tokenomy.core import efficiency
from tokenomy.core.coeffs import ModelShape
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.efficiency import magnitude as _mag  # of a count used as an exponent
from tokenomy.core.layout import Layout
from tokenomy.core.pipeline import rack_hop_ratio
from tokenomy.specs import Topology
from tokenomy.units import floats, fmt_bytes, one_of

BOUNDS = ("compute", "memory", "comms", "overhead", "pipeline hop")
REASONS = ("", "expert parallelism and redundant experts need an MoE model",
           "ep does not divide the routed + redundant experts",
           "the attention group (tp, or tp*ep without attn_dp) does not divide the attention heads",
           "the attention group and the KV heads: neither divides the other",
           "pp exceeds the number of layers", "batch must be a whole number of sequences",
           "batch smaller than dp x micro-batches (under 1 sequence each)",
           "fewer decode micro-batches than pipeline stages (stages idle)", "does not fit in HBM")
FITS_REASON = len(REASONS) - 1
FIRST_POINT_REASON = 6  # codes below it come from the layout alone, from it on from the batch or the memory


@dataclass(frozen=True)
class Peaks:
    """Per-chip peaks the pass runs against (floats, arrays or quantities)."""

    flops_per_s: object  # at the compute dtype
    hbm_bytes_per_s: object
    hbm_bytes: object
    narrow: object = False  # the compute dtype is 8 bits or fewer: GEMMs reach ρ·η_max (efficiency.py)


@dataclass(frozen=True)
class Precision:
    """Bytes per weight (by category), KV element and activation element."""

    dense_w: object
    embed_w: object
    expert_w: object
    kv: object = 2.0
    act: object = 2.0
    state: object = 2.0  # linear / SSM state


def _masked(i: int) -> cached_property:
    """A PassTerms time read on first use: part ``i`` of its ``unmasked`` seconds plus its NaN mask."""
    return cached_property(lambda terms: terms.unmasked[i] + terms.nan)


def _on_path(i: int) -> cached_property:
    """A PassTerms critical-path part read on first use: part ``i`` of its ``path`` seconds plus its NaN mask."""
    return cached_property(lambda terms: terms.path[i] + terms.nan)


@dataclass(frozen=True)
class PassTerms:
    """Arrays over the broadcast grid. Times per stage and micro-batch unless named otherwise; NaN where invalid.
    The splits of the memory and comms terms, the hop and the rates are derived on first read (``cached_property``):
    the sweep and the serving model read a few of them, and each is a grid-sized array."""

    chips: object
    batch: object
    context: object
    len_pass: object
    micro_batch: object  # sequences per micro-batch on the busiest replica
    flops: object  # the whole pass, all chips (model FLOPs)
    attention_flops: object  # the part spent in q·k and p·v, all chips
    compute_s: object
    memory_s: object
    comms_s: object
    overhead_s: object
    stage_s: object
    hops: object
    step_s: object  # TPOT in decode; the whole pass otherwise
    weight_bytes_per_chip: object  # resident
    kv_bytes_per_chip: object
    act_bytes_per_chip: object
    hbm_bytes: object  # usable per chip
    expert_rows: object  # GEMM rows per routed expert on the busiest rank
    experts_read: object  # distinct routed experts read per MoE layer on the busiest rank
    rack_hop_ratio: object
    reason: object  # index into REASONS; 0 = valid and fits
    nan: object = field(repr=False, default=0.0)  # 0 where the point is valid and fits, NaN elsewhere
    unmasked: tuple = field(repr=False, default=())  # (weights read, KV, activations, one hop, TP, EP) seconds
    flops_per_s: object = field(repr=False, default=None)  # the chip's peak, for the MFU
    hop_share_s: object = field(repr=False, default=None)  # the pipeline hops per stage (None: no hops)
    floor_s: object = field(repr=False, default=0.0)  # the kernels' launch floors f·K·κ·(1 + ε): GPU busy, in overhead
    microbatches: object = field(repr=False, default=1.0)  # M: a stage's chip runs M micro-batches a period
    # the stage's critical path beside its terms (module docstring): phi·min(compute, memory), the EP seconds two-batch
    # overlap hides, the host's work and the part of it hidden under the GPU (the kernels' floor: floor_s)
    path: tuple = field(repr=False, default=())

    @cached_property
    def bound(self):
        """Index into BOUNDS of the binding term (_bound); read on first use: a step timed only for its seconds
        (the serving model's ceil batch) never forms it."""
        others = ((2, self.comms_s), (3, self.overhead_s)) + (() if self.hop_share_s is None else
                                                               ((4, self.hop_share_s),))
        return _bound(self.compute_s, self.memory_s, np.maximum(self.compute_s, self.memory_s), others)

    @cached_property
    def memory_per_chip_bytes(self):
        return self.weight_bytes_per_chip + self.kv_bytes_per_chip + self.act_bytes_per_chip

    weights_read_s = _masked(0)  # the memory term split by what is read
    kv_s = _masked(1)
    act_s = _masked(2)
    hop_s = _masked(3)  # one pipeline hop
    tp_comm_s = _masked(4)  # the comms term split by what it carries
    ep_comm_s = _masked(5)  # exposed: what two-batch overlap leaves on the critical path
    # stage = max(compute, memory) + overlap + tp_comm + ep_comm + floor_s + host_work − host_hidden (times())
    overlap_s = _on_path(0)  # phi·min(compute, memory): the smaller term's part the kernels do not hide
    ep_hidden_s = _on_path(1)  # eps·min(EP, max(compute, memory)): hidden by two-batch overlap (not in ep_comm_s)
    host_work_s = _on_path(2)  # o_step + o_seq·b_a: the scheduler's CPU work
    host_hidden_s = _on_path(3)  # h·min(GPU, host): the host work hidden under the GPU

    @cached_property
    def pipeline_s(self):
        """The pass beyond one stage: step − stage (the other stages, micro-batches and hops; _period)."""
        return self.step_s - self.stage_s

    # the rates divide the small factors first, then the grid-sized step once (one pass over the grid each)
    @cached_property
    def tokens_per_s(self):
        return self.batch * self.len_pass / self.step_s

    @cached_property
    def tokens_per_s_per_chip(self):
        return (self.batch * self.len_pass / self.chips) / self.step_s

    @cached_property
    def tokens_per_s_per_user(self):
        return self.len_pass / self.step_s

    @cached_property
    def mfu(self):
        return self.flops / (self.chips * self.flops_per_s) / self.step_s

    def busy_shares(self):
        """(u_compute, u_hbm, u_link): the share of a period each unit of a stage's chip is busy, min(1, M·t/step)
        with t its kernels' compute time, its HBM time plus the kernels' launch floors (GPU time at full clocks),
        and its TP/EP communication; the load econ/energy.py turns into watts. NaN where the point has no time."""
        M, step = self.microbatches, self.step_s
        with np.errstate(divide="ignore", invalid="ignore"):
            return tuple(np.clip(M * t / step, 0.0, 1.0) for t in (self.compute_s, self.memory_s + self.floor_s,
                                                                  self.comms_s))

    @property
    def ok(self):
        return np.asarray(self.reason) == 0

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.reason)


_f, _one = floats, one_of  # float arrays that keep a quantity's units; one unit step of a count



def _calibrated(topo: Topology, eff: Efficiency) -> Topology:
    """The topology as the efficiency set sees it: scale-up α and achievable link bandwidth."""
    if eff.allreduce_latency_s is None and np.all(_f(eff.link_fraction) == 1.0):
        return topo
    up = topo.scale_up
    lat = up.latency_s if eff.allreduce_latency_s is None else eff.allreduce_latency_s
    return replace(topo, scale_up=replace(up, latency_s=lat, bytes_per_s=up.bytes_per_s * _f(eff.link_fraction)))


def _busiest(x, ranks):
    """The busiest of ``ranks`` ranks for a count with mean ``x`` and variance ``x`` (Gaussian extreme value;
    a count's variance is its mean times one of its unit)."""
    return x + np.sqrt(2.0 * x * _one(x) * np.log(np.maximum(ranks, 1.0)))


@dataclass(frozen=True)
class CacheTerms:
    """What attention costs per pass, summed over the model's attention classes (core/coeffs.py)."""

    flops_per_token: object  # q·k + p·v (cheaper of absorbed and plain + expanding the cache) + indexer
    read_per_seq: object  # bytes read per sequence per pass: attended KV entries + indexer keys + linear state
    written_per_token: object  # bytes written per new token: its KV entries (raw and compressed) + index keys
    written_per_seq: object  # bytes written per sequence per pass regardless of its tokens: the linear state
    cached_per_seq: object  # bytes kept per sequence: KV + index keys + linear state


def _classes(x):
    """A grid quantity against the attention classes (the class axis last)."""
    return np.expand_dims(x, -1)


def cache_terms(m, C, S, precision, kv_read_fraction=1.0) -> CacheTerms:
    """Attention's FLOPs and bytes for a pass of S new tokens per sequence over a context of C (arch/positions.py:
    which entries each kind caches, attends and indexes)."""
    Cn, Sn = _classes(C), _classes(S)
    where = (m.attn_window, m.attn_ratio, m.attn_chunk)
    att = attended(Cn, Sn, *where, m.attn_topk)
    topk = np.isfinite(m.attn_topk)
    # every entry the indexer scores, on average over the new tokens (only top-k layers have an indexer)
    scored = attended(Cn, Sn, *where) if np.any(topk) else att
    cache_n, index_n = cached(Cn, *where), indexed(Cn, *where)
    before = cached(np.maximum(Cn - Sn, 0.0 * Cn), *where)  # entries already cached: the plain form expands them
    absorbed = m.attn_score_absorbed * att
    plain = m.attn_score_plain * att + m.attn_unabsorb * before / Sn
    flops = (np.sum(np.minimum(absorbed, plain), axis=-1) * kv_read_fraction
             + np.sum(m.attn_index_flops * np.where(topk, scored, 0.0 * scored), axis=-1))
    # each new token reads its attended entries; all of them together at most the whole cache (top-k: S·k)
    kv_read = np.sum(m.attn_kv * np.minimum(cache_n, Sn / _one(Sn) * att), axis=-1) * kv_read_fraction
    state = m.state_elems * precision.state
    return CacheTerms(
        flops_per_token=flops, read_per_seq=(kv_read + np.sum(m.attn_index_kv * index_n, axis=-1)) * precision.kv
        + state, written_per_token=np.sum(m.attn_kv * (1.0 + m.attn_ratio) + m.attn_index_kv * np.where(
            m.attn_ratio > 0, m.attn_ratio, 1.0), axis=-1) * precision.kv,
        written_per_seq=state, cached_per_seq=np.sum(m.attn_kv * cache_n + m.attn_index_kv * index_n, axis=-1)
        * precision.kv + state)


def _structure(shape: ModelShape, lay: Layout, tp, ep, pp, a, ideal):
    """Reason codes that depend on the layout alone."""
    m = shape.coeffs
    r = _f(lay.redundant_experts)
    slots = _f(m.num_experts) + r
    moe = _f(m.moe_layers) > 0
    K = _f(shape.kv_heads)
    kv_ok = (np.mod(K, a) == 0) | (np.mod(a, K) == 0)
    code = np.select([((ep > 1) | (r > 0)) & ~moe, np.mod(slots, ep) != 0, np.mod(shape.num_heads, a) != 0,
                      ~kv_ok, pp > shape.num_layers], [1, 2, 3, 4, 5], 0)
    return np.where(ideal, 0, code)


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


@dataclass(frozen=True)
class Pass:
    """The pass asked of the engine (module docstring), every field broadcasting against the others: ``batch``
    sequences, each with ``context`` tokens of cache, passing ``len_pass`` new tokens (1: a decode; S: a prefill, or
    the verify of S − 1 drafts), beside ``prefill_tokens`` interleaved prompt tokens at mean context
    ``prefill_context`` in chunks of ``prefill_chunk`` tokens (None: spread as many prompts' are: ``batched``);
    ``kv_read_fraction`` the share of the cached context each token reads; ``hop_latency_s`` one pipeline hop's
    latency (None: the link's); ``ep_low_latency`` the EP all-to-all's kernels (None: low-latency where the pass is
    a decode: ``lower``). ``lower`` reads the context's fields; ``batched`` the batch, prefill tokens and chunk."""

    batch: object
    context: object
    len_pass: object = 1
    prefill_tokens: object = 0.0
    prefill_context: object = 0.0
    kv_read_fraction: object = 1.0
    hop_latency_s: object = None
    prefill_chunk: object = None
    ep_low_latency: object = None


def evaluate(shape: ModelShape, topo: Topology, peaks: Peaks, layout: Layout, precision: Precision, p: Pass,
             eff: Efficiency = ROOFLINE) -> PassTerms:
    """Evaluate pass ``p`` (see the module docstring): times(work(...))."""
    return times(work(shape, topo, layout, precision, p), topo, peaks, eff)


@dataclass(frozen=True)
class Lowered:
    """A pass on a layout at a context, per sequence and per token, before its batch (``work``'s first half): the
    splits, the stage share, attention FLOPs and KV bytes per token and per sequence. Lowered once, batched many
    times: the serving model times one context at several batches and prefill loads (serving/scheduler.py)."""

    shape: ModelShape
    layout: Layout
    precision: Precision
    ideal: object
    tp: object
    ep: object
    pp: object
    dp: object
    microbatches: object  # M
    attn_dp: object  # attention data-parallel beside EP (bool)
    context: object  # C
    len_pass: object  # S
    group: object  # g = tp·ep
    chips: object  # n
    stage_share: object  # f = ceil(L/pp)/L
    attn_group: object  # a: the attention tensor-parallel group
    kv_split_heads: object  # the KV-head split of the attention group
    slots: object  # routed + redundant expert slots
    slots_per_rank: object
    ep_low_latency: object  # the EP all-to-all runs the low-latency kernels (bool; _ep_shares)
    ep_shares: tuple  # (scale-up, scale-out) link copies per token-expert assignment of a dispatch or combine
    hop_latency_s: object  # a pipeline hop: latency + seconds per token of activations
    hop_s_per_token: object
    weight_bytes_per_chip: object  # resident
    attn_flops_per_token: object  # attention + state FLOPs per new token at the context
    chunk_attn_flops_per_token: object  # ... per interleaved prefill token at its context
    chunk_kv_bytes_per_token: object  # KV written per interleaved prefill token
    kv_bytes_per_seq: object  # KV read + written per sequence per pass
    cached_bytes_per_seq: object  # KV kept per sequence
    layout_code: object  # reason code from the layout alone (_structure)
    decode: object  # S <= 1
    rack_hop_ratio: object


def lower(shape: ModelShape, topo: Topology, layout: Layout, precision: Precision, p: Pass) -> Lowered:
    """The batch-free half of ``work``: layout-shaped splits and context-shaped costs (module docstring), of
    ``p``'s context fields (its batch is ``batched``'s). ``p.ep_low_latency``: the EP all-to-all runs the
    low-latency kernels (_ep_shares); None: where the pass is a decode (S <= 1); True for a decode-shaped pass of
    more tokens (the verify of 1 + drafts)."""
    m, lay, pr = shape.coeffs, layout, precision
    context, len_pass, prefill_context = p.context, p.len_pass, p.prefill_context
    kv_read_fraction, hop_latency_s, ep_low_latency = p.kv_read_fraction, p.hop_latency_s, p.ep_low_latency
    ideal = np.asarray(lay.ideal, dtype=bool)
    tp, ep, pp, dp = (_f(x) for x in (lay.tp, lay.ep, lay.pp, lay.dp))
    C, S = _f(context), _f(len_pass)
    one = _one(S)  # one token
    M = pp if lay.microbatches is None else _f(lay.microbatches)
    ad = (ep > 1) if lay.attn_dp is None else (np.asarray(lay.attn_dp, dtype=bool) & (ep > 1))
    ab = _f(pr.act)
    L, D, k = _f(shape.num_layers), _f(shape.hidden_size), _f(m.experts_per_tok)
    moe, E = _f(m.moe_layers), _f(m.num_experts)

    # layout-shaped: splits and stage share
    g, n = tp * ep, tp * ep * pp * dp
    f = np.maximum(np.ceil(L / pp), 1.0) / L
    a = np.where(ad, tp, g)  # attention tensor-parallel group
    kvs = np.where(ideal, a, np.minimum(a, shape.kv_heads))
    slots = E + _f(lay.redundant_experts)
    decode = S <= one
    low_latency = decode if ep_low_latency is None else np.asarray(ep_low_latency, dtype=bool)
    ep_shares = _ep_shares(topo, ep, tp, m, low_latency)
    crosses = pp * g > topo.domain_size
    up, out = topo.scale_up, topo.scale_out
    hop_a = np.where(crosses, out.latency_s, up.latency_s) if hop_latency_s is None else _f(hop_latency_s)
    hop_a = np.where(pp > 1, hop_a, 0.0)
    hop_b = np.where(pp > 1, D * ab / g / np.where(crosses, out.bytes_per_s, up.bytes_per_s), 0.0)
    w_chip = f * ((m.capacity_dense_params * pr.dense_w + m.capacity_embed_params * pr.embed_w) / a
                  + m.capacity_expert_params * pr.expert_w * (slots / np.maximum(E, 1.0)) / g)

    # context-shaped: FLOPs per token, KV per sequence
    ct = cache_terms(m, C, S, pr, kv_read_fraction)
    pf = cache_terms(m, np.maximum(prefill_context, one), one + 0.0 * C, pr)  # one chunk token
    return Lowered(
        shape=shape, layout=lay, precision=pr, ideal=ideal, tp=tp, ep=ep, pp=pp, dp=dp, microbatches=M, attn_dp=ad,
        context=C, len_pass=S, group=g, chips=n, stage_share=f, attn_group=a, kv_split_heads=kvs, slots=slots,
        slots_per_rank=slots / ep, ep_low_latency=low_latency, ep_shares=ep_shares, hop_latency_s=hop_a,
        hop_s_per_token=hop_b, weight_bytes_per_chip=w_chip,
        attn_flops_per_token=ct.flops_per_token + m.state_flops_per_token,
        chunk_attn_flops_per_token=pf.flops_per_token + m.state_flops_per_token,
        chunk_kv_bytes_per_token=pf.written_per_token,
        kv_bytes_per_seq=ct.read_per_seq + S * ct.written_per_token + ct.written_per_seq,
        cached_bytes_per_seq=ct.cached_per_seq, layout_code=_structure(shape, lay, tp, ep, pp, a, ideal),
        decode=decode, rack_hop_ratio=rack_hop_ratio(k, np.ceil(f * moe), up.bytes_per_s, out.bytes_per_s))


def work(shape: ModelShape, topo: Topology, layout: Layout, precision: Precision, p: Pass) -> Work:
    """Lower pass ``p`` on a layout to the busiest chip's FLOPs, bytes and collectives (module docstring)."""
    return batched(lower(shape, topo, layout, precision, p), p.batch, p.prefill_tokens, p.prefill_chunk)


def _plus(x, k, y):
    """x + k·y; x itself where every k is 0 and y is finite (0·y adds 0, exactly): a step without prefill tokens
    skips their grid-sized terms. (Quantities always take the sum: the dimensional tests check its units.)"""
    if not np.any(k) and np.all(np.isfinite(y)):
        return x
    return x + k * y


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
    P = _f(prefill_tokens) + 0.0 * _one(S)  # in the unit of S (the default 0 has none)
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
    pad = _zero_of(_mag(T))  # T's shape for the operand widths (efficiency.balance_rows)
    kvs, kv_batch = lo.kv_split_heads, np.asarray(lay.kv_batch, dtype=bool)
    kv_split = np.where(kv_batch, np.maximum(kvs, np.minimum(a, np.maximum(b_a, 1.0))), kvs) if np.any(kv_batch) \
        else kvs
    A, x_read, expert_flops, expert_rows, expert_bytes, ep_bytes = _routed(lo, T)
    structure = _first_code([lo.layout_code != 0, B != np.round(B), B < dp * M, lo.decode & (M < pp)],
                            [lo.layout_code, 6, 7, 8])
    return Work(
        n=lo.chips, batch=B, context=lo.context, len_pass=S, micro_batch=b, pp=pp, stage_kernels=f * m.kernels + _zero_of(b),
        microbatches=M, decode=lo.decode,
        # (the per-point factors multiply the grid once: scalars and layout columns are folded first)
        flops=_plus(B * (S * (m.matmul_flops_per_token + attn_tok)), P, m.matmul_flops_per_token + attn_pf),
        attention_flops=B * (S * attn_tok),
        dense_flops=_plus(b_a * (S * dense_ftok * (f / a)), p_a, (dense_ftok + attn_pf) * (f / a)),
        dense_rows=T_a, attn_flops=b_a * (f * S * attn_tok / a),
        attn_rows=S * shape.num_heads / np.maximum(_f(shape.kv_heads), a),
        dense_w=_f(pr.dense_w) + pad, expert_w=_f(pr.expert_w) + pad, kv_w=_f(pr.kv) + pad,
        expert_flops=expert_flops, expert_rows=expert_rows, experts_read=x_read,
        weight_bytes=f * (m.dense_params * pr.dense_w + m.head_params * pr.embed_w) / a + expert_bytes,
        kv_bytes=_plus(b_a * (lo.kv_bytes_per_seq * (f / kv_split)), p_a,
                       lo.chunk_kv_bytes_per_token * (f / kv_split)),
        act_bytes=T * (f * m.act_elems_per_token * ab / g),
        ar_group=np.where(lo.ideal, 1.0, a), ar_count=f * (L + np.where(shape.parallel_block, moe, L)),
        ar_bytes=T_a * (D * ab), q_count=np.where(kv_batch, f * L, 0.0),
        q_bytes=T_a * (2.0 * shape.num_heads * shape.head_dim * ab / a),
        ep_group=np.where(lo.ideal, 1.0, ep), ep_stride=tp, ep_count=np.where(ad, 2.0 * f * moe, 0.0),
        ep_bytes=ep_bytes, ep_low_latency=lo.ep_low_latency, ep_up_share=lo.ep_shares[0],
        ep_out_share=lo.ep_shares[1], host_seqs=b_a, hop_s=_affine(lo.hop_latency_s, lo.hop_s_per_token, T, pad),
        weight_bytes_per_chip=lo.weight_bytes_per_chip, kv_bytes_per_chip=f * per_rank * lo.cached_bytes_per_seq
        / kv_split, act_bytes_per_chip=T * (m.act_peak_elems_per_token * ab / g), ideal=lo.ideal,
        structure=structure, rack_hop_ratio=lo.rack_hop_ratio)


def _affine(a, b, x, zero_x):
    """a + b·x; where a and b are 0 and x finite (``zero_x`` the plain 0 of _zero_of), zeros of that shape."""
    if isinstance(zero_x, float) and not np.any(a) and not np.any(b):
        return np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(x)))
    return a + b * x


def _zero_of(grid):
    """0·grid (zeros in a bare grid's shape), or a plain 0 where the grid is finite: adding either to a number
    gives the same value, the plain 0 without a grid-sized array."""
    return 0.0 if np.all(np.isfinite(grid)) else 0.0 * grid


def _first_code(conds, codes):
    """np.select(conds, codes, 0) over the conditions' broadcast shape, the conditions that hold nowhere skipped."""
    shape = np.broadcast_shapes(*(np.shape(c) for c in conds), *(np.shape(v) for v in codes))
    live = [(c, v) for c, v in zip(conds, codes) if np.any(c)]
    out = np.select([c for c, _ in live], [v for _, v in live], 0) if live else \
        np.zeros((), dtype=np.result_type(*codes, 0))
    return out if np.shape(out) == shape else np.broadcast_to(out, shape).copy()


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
    A, x_read = _expert_load(T, k, lo.slots, lo.slots_per_rank, lo.ep, moe)
    return (A, x_read, f * moe * A * efficiency.FLOPS_PER_WEIGHT * m.expert_params / tp,
            np.where(x_read > 0, A / np.maximum(x_read, 1e-30), _one(A)),
            f * moe * x_read * m.expert_params * pr.expert_w / tp, A * D * dispatch_combine_bytes(pr) / 2.0 / tp)


FP8_DISPATCH_SHARE = (1.0 + 4.0 / 128.0) / 2.0  # of a 16-bit element: FP8 + a float32 scale per 128 channels


def dispatch_combine_bytes(pr: Precision):
    """Bytes per hidden element a token-expert assignment moves in its dispatch and its combine together:
    w_dispatch + w_act. Experts whose weights have 8 bits or fewer take 8-bit activations, quantized before the
    dispatch, so it moves FP8 with a float32 scale per 128 channels; the combine returns the expert's output in
    16 bits (DeepEP README: low-latency dispatch in FP8, combine in BF16; DeepSeek-V3 report §3.3.2)."""
    ab = _f(pr.act)
    narrow = _mag(_f(pr.expert_w)) * 2.0 <= _mag(ab)  # 8 bits or fewer against 16-bit activations
    return ab * (np.where(narrow, FP8_DISPATCH_SHARE, 1.0) + 1.0)


def _ep_shares(topo: Topology, ep, tp, m, low_latency):
    """(scale-up, scale-out) link copies per token-expert assignment of the EP dispatch and combine, as DeepEP's two
    kinds of kernel run them and the engines choose them (SGLang --deepep-mode auto, vLLM's deepep_high_throughput
    / deepep_low_latency backends): a pass of several tokens per sequence (prefill) runs the normal kernels, one
    copy per destination domain over scale-out and per rank over scale-up (collectives.routed_shares, node-limited
    routing included); a decode pass runs the low-latency kernels, CUDA-graphed with fixed buffers, which send
    every token-expert pair on its own (DeepEP README: low-latency kernels, "pure RDMA"; collectives.
    all_to_all_shares). A decode step with interleaved prefill tokens keeps its kind (SGLang switches such a
    step to the normal kernels, whose CPU sync this model does not charge); a verify pass of 1 + drafts tokens is
    decode-shaped and CUDA-graphed like a decode (``lower``'s ``ep_low_latency``)."""
    plain = col.all_to_all_shares(topo, ep, tp)
    normal = col.routed_shares(topo, ep, tp, m.experts_per_tok, m.n_group, m.topk_group)
    return tuple(np.where(low_latency, p, n) for p, n in zip(plain, normal))


def experts_touched(tokens, num_experts, experts_per_tok):
    """Expected distinct experts one MoE layer reads when ``tokens`` tokens each pick k of E uniformly:
    E·(1 − (1 − k/E)^T). T=1 gives k; T→∞ gives E. (Balls-in-bins; real routers are less uniform.)"""
    E = np.maximum(_f(num_experts), 1.0)
    return E * -np.expm1(_f(_mag(tokens)) * np.log1p(-np.minimum(experts_per_tok / E, 1.0 - 1e-12)))


def _expert_load(T, k, slots, e_rank, ep, moe):
    """(A, x): token-expert assignments and distinct experts read on the busiest EP rank (module docstring)."""
    A = np.where(moe > 0, np.minimum(_busiest(T * k / ep, ep), T * np.minimum(k, e_rank)), 0.0)
    p_touch = np.where(moe > 0, experts_touched(T, slots, k) / np.maximum(slots, 1.0), 0.0)  # per expert slot
    mu_x = e_rank * p_touch
    x = np.clip(mu_x + np.sqrt(2.0 * mu_x * (1.0 - p_touch) * np.log(np.maximum(ep, 1.0))), mu_x, e_rank)
    return A, np.where(moe > 0, x, 0.0)


def _compute_s(w: Work, peaks: Peaks, eff: Efficiency):
    """[F_dense / η(M_dense) + F_attn / η(M_attn) + F_expert / η(M_expert)] / peak, each GEMM at rows no fewer than
    its balance rows: below them it is memory-bound and its time is the read, counted in memory_s (efficiency.py).
    η_max is the set's 16-bit share, times ρ where the compute dtype is narrow (``Efficiency.at_compute``)."""
    eff = eff.at_compute(peaks.narrow)

    def share(rows, operand_bytes, kv=False):
        balance = eff.balance_rows(peaks.flops_per_s, peaks.hbm_bytes_per_s, operand_bytes, kv)
        return eff.gemm_fraction(np.maximum(rows, balance))
    split = _tbo(eff)  # two-batch overlap: each micro-batch's weight GEMMs get half the rows
    flops_s = w.dense_flops / share(w.dense_rows / split, w.dense_w) + w.attn_flops / share(w.attn_rows, w.kv_w, True)
    if np.any(w.expert_flops):  # a dense model's 0/η adds nothing
        flops_s = flops_s + w.expert_flops / share(w.expert_rows / split, w.expert_w)
    return flops_s / peaks.flops_per_s


def _comms_s(w: Work, topo: Topology, ring_share=1.0):
    """(TP, EP) seconds: n_AR all-reduces (+ batch-sharded-KV all-to-alls) and the dispatch + combine all-to-alls;
    ``ring_share``: η_nccl/η_link, the ring all-reduce's bandwidth over the P2P kernels' (``topo`` carries η_link)."""
    tp = w.ar_count * col.all_reduce_cost(topo, w.ar_group, ring_share=ring_share)(w.ar_bytes)
    if np.any(w.q_count > 0):
        tp = tp + np.where(w.q_count > 0, w.q_count * col.all_to_all_cost(topo, w.ar_group)(w.q_bytes), 0.0)
    if not np.any(w.ep_count > 0):  # no dispatch and combine (no attention-DP with
        return tp, 0.0  # EP): 0, not formed (quantities take the masked sum: its unit is checked, tests/dims)
    # the normal kernels (a prefill pass: _ep_shares) move MB-sized chunks over NVLink at the bulk
    # rate the ring reaches (DeepEP intranode: 153 GB/s of the H800's 200), not the P2P kernels' η_link, fitted on
    # decode-sized all-reduces
    up_share = w.ep_up_share / np.where(w.ep_low_latency, 1.0, ring_share)
    a2a = col.all_to_all_cost(topo, w.ep_group, w.ep_stride, (up_share, w.ep_out_share))(w.ep_bytes)
    return tp, np.where(w.ep_count > 0, w.ep_count * a2a, 0.0)


def exposed_ep_s(ep_s, compute_s, ep_overlap, sm_share=0.0, low_latency=True):
    """EP dispatch + combine left on the critical path under two-batch overlap ε, kernels k = max(compute, memory).
    Two-batch overlap splits the step into two micro-batches and runs one's all-to-all while the other's kernels run
    (SGLang two-batch overlap, DeepSeek's inference system, open-infra-index day 6): at most the kernels hide it, and
    only as far as its kernels leave them the SMs (s, by DeepEP mode; s = 0: ep − ε·min(ep, k)):
      low-latency kernels (decode, ``low_latency``) hold every SM while they send, receive or spin and none while the
        data is in flight (DeepSeek's decode profile: communication on 0 SMs; LMSYS 2025-05-05): the share s of their
        time serialises, ep − ε·min((1 − s)·ep, k);
      normal kernels (prefill) hold s of the SMs for the whole overlapped layer (DeepSeek's prefill profile:
        computation on 108 SMs, communication on 24; LMSYS: every kernel slower under TBO, "reduced SMs"): with ε = 1
        the pair takes max(ep, k/(1 − s)), so ep − ε·(ep + k − max(ep, k/(1 − s))) is left beyond the kernels
        (github.com/deepseek-ai/profile-data)."""
    if not np.any(sm_share):
        return ep_s - ep_overlap * np.minimum(ep_s, compute_s)
    hidden_ll = np.minimum((1.0 - sm_share) * ep_s, compute_s)
    hidden_normal = ep_s + compute_s - np.maximum(ep_s, compute_s / (1.0 - sm_share))
    return ep_s - ep_overlap * np.where(low_latency, hidden_ll, hidden_normal)


def exposed_host_s(host_s, gpu_s, host_overlap):
    """Host time left on the critical path: host − h·min(host, GPU). An overlap scheduler (h = 1) prepares step
    i + 1 while the GPU runs step i, so a step takes max(GPU, host); without one (h = 0) the CPU work and the
    GPU's add (SGLang's zero-overhead batch scheduler, v0.4 blog; TensorRT-LLM's and vLLM's async schedulers)."""
    return host_s - host_overlap * np.minimum(host_s, gpu_s)


def _fit(structure, over_hbm):
    """(reason, nan): the layout's or batch's code where it has one, else FITS_REASON where the memory is over the
    HBM, else 0; and 0 where that is 0, NaN elsewhere (added to every time), or None where every point is valid
    and fits (the common case: nothing to add). Without any layout code both come from ``over_hbm`` alone: the
    same values, two grid-sized np.where fewer."""
    structure = np.asarray(structure)
    shape = np.broadcast_shapes(structure.shape, np.shape(over_hbm))
    clean = not np.any(structure)
    if clean and not np.any(over_hbm):
        return np.zeros(shape, dtype=np.int64), None
    fits_code = over_hbm * FITS_REASON  # int64, as np.where(over_hbm, FITS_REASON, 0)
    if structure.dtype == fits_code.dtype and shape == fits_code.shape and clean:
        return fits_code, np.where(over_hbm, _NAN, _ZERO)
    reason = np.where(structure != 0, structure, fits_code)
    return reason, np.where(reason == 0, _ZERO, _NAN)


_ZERO, _NAN = np.zeros(()), np.full((), np.nan)  # 0-d operands: np.where's fast path for scalar branches


def _period(w: Work, stage_s, hop_total):
    """Decode: max(M·stage, pp·stage + hops·hop); a longer pass: (M + pp − 1)·stage + hops·hop (``hop_total`` None:
    no hops). Only the kind of pass present is formed, and max(M·stage, pp·stage + h) = pp·stage + h when M is pp
    (h >= 0; the default micro-batches): the same values as the full expression."""
    pp, M, decode = w.pp, w.microbatches, np.asarray(w.decode)
    add = (lambda x: x) if hop_total is None else (lambda x: x + hop_total)  # noqa: E731

    def dec():
        if M is pp or np.array_equal(M, pp):
            return add(pp * stage_s)
        return np.maximum(M * stage_s, add(pp * stage_s))

    def longer():
        return add((M + pp - 1.0) * stage_s)
    if np.broadcast_shapes(decode.shape, np.shape(stage_s)) == np.shape(stage_s):
        if np.all(decode):
            return dec()
        if not np.any(decode):
            return longer()
    return np.where(decode, dec(), longer())


def _bound(compute_s, memory_s, top, others):
    """Index into BOUNDS of the largest term: compute or memory, then each of ``others`` ((index, seconds) pairs)
    where it is strictly larger than all before it; ``top`` = max(compute, memory). NaN compares false."""
    # 1 (memory) unless compute >= memory, NaN included, as np.where(compute >= memory, 0, 1); int8 (five codes):
    # an eighth of int64's memory traffic over the grid
    bound = np.asarray(np.logical_not(np.greater_equal(compute_s, memory_s))).view(np.int8)
    shape = np.broadcast_shapes(bound.shape, *(np.shape(t) for _, t in others))
    if shape != bound.shape:
        bound = np.broadcast_to(bound, shape).copy()
    for j, (i, t) in enumerate(others):
        np.copyto(bound, np.int8(i), where=t > top)  # the mask broadcasts (an array-valued term may be smaller)
        if j < len(others) - 1:
            top = np.maximum(top, t)
    return bound


def _sm_share(w: Work, eff: Efficiency):
    """s: the SMs the dispatch/combine takes from the kernels it overlaps, by the DeepEP mode of the pass (the
    low-latency kernels for decode-shaped passes, the normal ones for prefill: _ep_shares); 0 without overlap."""
    normal, low = _f(eff.ep_sm_normal), _f(eff.ep_sm_low_latency)
    if not np.any(_f(eff.ep_overlap)) or not (np.any(normal) or np.any(low)):
        return 0.0
    return np.where(w.ep_low_latency, low, normal)


def _tbo(eff: Efficiency):
    """1 + ε: how many times a step launches its kernels and streams its weights under two-batch overlap, and by how
    much each weight GEMM's rows shrink (each micro-batch runs every layer on its half of the tokens: LMSYS measured
    TBO 27% slower than none at 32 tokens a GPU, 25% faster at 256, where "GEMM benefit from a larger effective
    batch size" without it, 2025-05-05)."""
    return 1.0 + _f(eff.ep_overlap)


def kernel_terms(w: Work, peaks: Peaks, eff: Efficiency = ROOFLINE) -> tuple:
    """(compute, weights read, KV read, activations) seconds of a lowered pass's kernels, before any fit or validity
    mask: compute at the GEMM efficiency of its rows, each read at its bandwidth (weights streamed 1 + ε times under
    two-batch overlap). Linear in the work's sums, so a part of the op list (core/op_costs) gets its own share."""
    bw = peaks.hbm_bytes_per_s * eff.hbm_fraction  # streamed weights and activations
    kv_bw = bw if eff.kv_hbm_fraction is None else peaks.hbm_bytes_per_s * eff.kv_hbm_fraction  # paged KV gathers
    return _compute_s(w, peaks, eff), _tbo(eff) * w.weight_bytes / bw, w.kv_bytes / kv_bw, w.act_bytes / bw


def times(w: Work, topo: Topology, peaks: Peaks, eff: Efficiency = ROOFLINE) -> PassTerms:
    """Time a lowered pass under an efficiency set: stage terms, pass period, binding term, fit (module
    docstring). Every time gets ``nan`` (0, or NaN where the point is invalid or does not fit) added once."""
    compute_s, weights_read_s, kv_s, act_s = kernel_terms(w, peaks, eff)
    memory_s = weights_read_s + kv_s + act_s
    ring_share = 1.0 if eff.nccl_link_fraction is None else _f(eff.nccl_link_fraction) / _f(eff.link_fraction)
    tp_comm, ep_all = _comms_s(w, _calibrated(topo, eff), ring_share)
    hbm = peaks.hbm_bytes * eff.hbm_usable_fraction
    # weights + KV + activations > HBM, the per-batch parts summed first (the activations are per load)
    reason, nan = _fit(w.structure, w.act_bytes_per_chip > hbm - (w.weight_bytes_per_chip + w.kv_bytes_per_chip))
    grid = np.shape(reason)
    sm_share = _sm_share(w, eff)
    ep_comm = exposed_ep_s(ep_all, np.maximum(compute_s, memory_s), _f(eff.ep_overlap), sm_share,  # under the other's
                           w.ep_low_latency)
    nan = np.zeros(grid) if nan is None else nan  # every time gets it: NaN where the point is invalid or over HBM
    compute_s, memory_s = compute_s + nan, memory_s + nan
    comms_s = tp_comm + ep_comm + nan  # = (tp + nan) + (ep + nan): the parts are read lazily
    floor = _f(eff.kernel_overhead_s) * _tbo(eff) * w.stage_kernels
    host = _f(eff.overhead_s) + _f(eff.sequence_overhead_s) * w.host_seqs
    top = np.maximum(compute_s, memory_s)
    overlap = eff.overlap_loss * np.minimum(compute_s, memory_s)  # the part of the smaller term kernels do not hide
    gpu_s = top + overlap + comms_s + floor
    host_s = exposed_host_s(host, gpu_s, _f(eff.host_overlap))
    overhead = floor + host_s + nan
    stage_s = gpu_s + host_s
    pp = w.pp
    hops = np.where(pp > 1, np.where(w.decode, pp, pp - 1.0), 0.0)
    # no hops (pp = 1): hops·hop is 0 (NaN only where the stage is NaN), adds nothing and binds nothing
    hop_total = None if not np.any(hops) else hops * (w.hop_s + nan)
    period = _period(w, stage_s, hop_total)
    return PassTerms(
        chips=w.n, batch=w.batch, context=w.context, len_pass=w.len_pass, micro_batch=w.micro_batch, flops=w.flops,
        attention_flops=w.attention_flops, compute_s=compute_s, memory_s=memory_s, comms_s=comms_s, overhead_s=overhead, stage_s=stage_s, hops=hops, step_s=period,
        weight_bytes_per_chip=w.weight_bytes_per_chip, kv_bytes_per_chip=w.kv_bytes_per_chip,
        act_bytes_per_chip=w.act_bytes_per_chip, hbm_bytes=hbm,
        expert_rows=w.expert_rows, experts_read=w.experts_read, rack_hop_ratio=w.rack_hop_ratio, reason=reason,
        nan=nan, unmasked=(weights_read_s, kv_s, act_s, w.hop_s, tp_comm, ep_comm), flops_per_s=peaks.flops_per_s,
        hop_share_s=None if hop_total is None else hop_total / pp, floor_s=floor, microbatches=w.microbatches,
        path=(overlap, ep_all - ep_comm, host, host - host_s))


def at(x, shape: tuple[int, ...], i: int) -> float:
    """Element ``i`` (flat) of ``x`` broadcast to ``shape``."""
    return float(np.ravel(np.broadcast_to(x, shape))[i])


def why_not(r: PassTerms, layout: Layout, i: int) -> str | None:
    """One sentence on why point ``i`` (flat index) is invalid or does not fit; None if it is fine."""
    shape = r.shape
    g = lambda x: at(x, shape, i)  # noqa: E731
    code = int(g(r.reason))
    if code == 0:
        return None
    if code == FITS_REASON:
        return (f"does not fit: needs {fmt_bytes(g(r.memory_per_chip_bytes))} per chip (weights {fmt_bytes(g(r.weight_bytes_per_chip))}"
                f" + KV {fmt_bytes(g(r.kv_bytes_per_chip))} + activations {fmt_bytes(g(r.act_bytes_per_chip))}) > "
                f"{fmt_bytes(g(r.hbm_bytes))} usable HBM")
    return f"{REASONS[code]} ({layout.at(shape, i).label()}, batch {g(r.batch):g})"
