"""A pass lowered on a layout at a context, before its batch (the pass engine's first half, core/engine.py):

    splits      n = tp·ep·pp·dp; g = tp·ep; a = tp with attention-DP, else g (the attention tensor-parallel group);
                f = ceil(L/pp)/L the stage's share of the layers; slots = E + r routed + redundant experts
    resident    W_chip = f·[(N_dense·w_dense + N_embed·w_embed)/a + N_expert·w_expert·(slots/E)/g]
    attention   per token at context C: min(absorbed, plain + un-absorb·(C − S)/S) FLOPs, the entries each kind
                caches, attends and indexes (arch/positions.py; ``cache_terms``)
    KV          per sequence per pass: read (attended entries + index keys + linear state) + S·written per token
    hop         a pipeline hop: α of the link it crosses + D·w_act/g / β per token (pp > 1)
    EP copies   per token-expert assignment on scale-up and scale-out, by DeepEP kernel kind (``_ep_shares``)
    balance     β of the busiest EP rank under the router's measured routing (arch/routing.py; 1 without one)
The layout's own reason codes (core/reasons.py) come from the splits alone (``_structure``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy import units
from tokenomy.arch.positions import attended, cached, indexed
from tokenomy.core import collectives as col
from tokenomy.core.coeffs import ModelShape
from tokenomy.core.layout import Layout
from tokenomy.core.pipeline import rack_hop_ratio
from tokenomy.specs import Topology
from tokenomy.units import floats

_f = floats  # float arrays (a quantity keeps its units)

@dataclass(frozen=True)
class Precision:
    """Bytes per weight (by category), KV element and activation element; ``narrow_experts``: the routed experts'
    weights have 8 bits or fewer (their tokens are dispatched in FP8: work.dispatch_combine_bytes), said by the
    deployment that knows the dtypes (``Precision.of``), as Peaks.narrow says the compute dtype's."""

    dense_w: object
    embed_w: object
    expert_w: object
    kv: object = 2.0
    act: object = 2.0
    state: object = 2.0  # linear / SSM state
    narrow_experts: object = False

    @classmethod
    def of(cls, dense_w: float, embed_w: float, expert_w: float, kv: float, state: float) -> "Precision":
        """The widths of a deployment (plain bytes), 16-bit activations; experts narrow where w_expert <= w_act/2."""
        act = cls.act
        return cls(dense_w, embed_w, expert_w, kv, act, state, narrow_experts=bool(np.all(expert_w * 2.0 <= act)))


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
    kv_read = np.sum(m.attn_kv * np.minimum(cache_n, Sn / units.TOKEN * att), axis=-1) * kv_read_fraction
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
    expert_balance: object  # β: mean/max assignments per EP rank under the router's measured routing (1: balls
    #                         in bins alone; arch/routing.py), EPLB's curve where the layout has redundant experts
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
    one = units.TOKEN
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
    balance = 1.0 if shape.expert_balance is None else \
        np.where(ideal, 1.0, shape.expert_balance.at(ep, _f(lay.redundant_experts) > 0))
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
        slots_per_rank=slots / ep, expert_balance=balance, ep_low_latency=low_latency, ep_shares=ep_shares, hop_latency_s=hop_a,
        hop_s_per_token=hop_b, weight_bytes_per_chip=w_chip,
        attn_flops_per_token=ct.flops_per_token + m.state_flops_per_token,
        chunk_attn_flops_per_token=pf.flops_per_token + m.state_flops_per_token,
        chunk_kv_bytes_per_token=pf.written_per_token,
        kv_bytes_per_seq=ct.read_per_seq + S * ct.written_per_token + ct.written_per_seq,
        cached_bytes_per_seq=ct.cached_per_seq, layout_code=_structure(shape, lay, tp, ep, pp, a, ideal),
        decode=decode, rack_hop_ratio=rack_hop_ratio(k, np.ceil(f * moe), up.bytes_per_s, out.bytes_per_s))


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
