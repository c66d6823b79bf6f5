"""Layout search: every valid layout x batch in one vectorised engine pass -> the Pareto front under SLOs.

Candidates: tp dividing the attention heads (and dividing or divided by the KV heads), ep for MoE models from the
powers of two and the divisors of the chip budget and of the scale-up domain, with the fewest redundant experts that
fill its slots evenly (r = (-E) mod ep, at most E/4: DeepSeek's EP 144 holds 256 + 32 experts, 2 per GPU), pp <=
layers, dp; tp·ep·pp·dp <= budget (== for a question's default, answers.layout_search); for ep > 1 attention
data-parallel (DeepSeek) or tensor-parallel; head- or batch-sharded KV when the attention group outnumbers the KV heads. Each layout is crossed
with every (whole) batch. Decode at the given context gives tokens/s per chip and per user (1/TPOT); TTFT is one
prompt of ``context`` tokens per replica through the same layout (no queueing). The front maximises tokens/s per
chip and per user over the candidates that fit and meet the constraints. Every time comes from core.engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tokenomy.core import engine
from tokenomy.core.coeffs import ModelShape
from tokenomy.core.deployment import Deployment
from tokenomy.core.engine import BOUNDS, REASONS, PassTerms, why_not
from tokenomy.core.explain import efficiency_terms
from tokenomy.core.layout import Layout
from tokenomy.units import fmt_bytes, fmt_seconds, fmt_si

SLO_REASONS = ("below the minimum tokens/s per user", "TTFT above the maximum")
ROW_KEYS = ("tokens_per_s_per_chip", "tokens_per_s_per_user", "step_s", "compute_s", "memory_s", "tp_comm_s",
            "ep_comm_s", "hop_s", "mfu", "memory_per_chip_bytes", "weight_bytes_per_chip", "kv_bytes_per_chip",
            "micro_batch", "rack_hop_ratio")
MAX_REDUNDANT_SHARE = 0.25  # redundant experts at most E/4 (DeepSeek's decode: 32 of 256)


@dataclass(frozen=True)
class Constraints:
    context: float = 8192.0
    min_tokens_per_s_per_user: float = 0.0
    max_ttft_s: float = math.inf

    def __post_init__(self) -> None:
        if not (self.context > 0 and math.isfinite(self.context)):
            raise ValueError(f"context: must be a positive number of tokens, got {self.context}")
        if not self.min_tokens_per_s_per_user >= 0 or not self.max_ttft_s > 0:
            raise ValueError("min_tokens_per_s_per_user: must be >= 0, and max_ttft_s > 0")


MAX_CHIPS = 2**20  # beyond any machine; the web's bound too (web/params.py MAX_CHIPS)


def _degrees(limit: int, *extra: int) -> np.ndarray:
    out = {1 << i for i in range(int(limit).bit_length())}
    for x in extra:
        out |= {d for d in range(1, x + 1) if x % d == 0}
    return np.array(sorted(d for d in out if d <= limit), dtype=np.int64)


def candidate_layouts(shape: ModelShape, chips: int, domain_size: int, *, exact: bool = False) -> Layout:
    """Structurally valid layouts using at most (``exact``: exactly) ``chips`` chips, as flat arrays."""
    if not 0 < chips <= MAX_CHIPS:  # the divisors of chips are enumerated: bound it where every search starts
        raise ValueError(f"chips: must be a positive integer at most {MAX_CHIPS:,}, got {chips}")
    m, deg = shape.coeffs, _degrees(chips, chips, domain_size)
    E, H, K = float(m.num_experts), shape.num_heads, shape.kv_heads
    moe = bool(m.moe_layers)
    tp = deg[(H % deg == 0) & ((K % deg == 0) | (deg % K == 0))]
    ep = deg[(-E % deg) <= MAX_REDUNDANT_SHARE * E] if moe else np.array([1])
    pp = deg[deg <= shape.num_layers]
    g = np.stack(np.meshgrid(tp, ep, pp, deg, [0, 1], [0, 1], indexing="ij"), -1).reshape(-1, 6)
    t, e, p, d, ad, kb = g.T
    a = np.where((e > 1) & (ad == 1), t, t * e)
    n = t * e * p * d
    keep = (((n == chips) if exact else (n <= chips)) & ((e > 1) | (ad == 1)) & (H % a == 0)
            & ((K % a == 0) | (a % K == 0)) & ((kb == 0) | (a > K)))
    t, e, p, d, ad, kb = (x[keep] for x in (t, e, p, d, ad, kb))
    r = np.where(e > 1, np.mod(-E, e), 0).astype(np.int64) if moe else np.zeros_like(e)
    return Layout(t, e, p, d, ad.astype(bool), kb.astype(bool), redundant_experts=r)


def default_batches(max_batch: int = 65536) -> np.ndarray:
    """1, 2, 3, 4, 6, 8, 12, ... : powers of two and 1.5x between them (whole batches)."""
    b = np.unique(np.concatenate([2.0 ** np.arange(17), 3.0 * 2.0 ** np.arange(15)]))  # whole sequences only
    return b[b <= max_batch]


def _column(lay: Layout) -> Layout:
    """A flat layout array as a column, so it crosses a row of batches."""
    col = lambda x: None if x is None else np.asarray(x)[:, None]  # noqa: E731
    return Layout(col(lay.tp), col(lay.ep), col(lay.pp), col(lay.dp), col(lay.attn_dp), col(lay.kv_batch),
                  redundant_experts=col(lay.redundant_experts))


@dataclass(frozen=True)
class SearchResult:
    deployment: Deployment  # the model, hardware, dtypes and efficiency set searched (its layout is unused)
    layouts: Layout  # candidate layouts, shape (P,)
    batches: np.ndarray  # shape (B,)
    decode: PassTerms  # shape (P, B)
    ttft_s: np.ndarray  # shape (P,)
    feasible: np.ndarray  # shape (P, B)
    front: np.ndarray  # flat indices into (P, B), most tokens/s per user first
    rejected: dict = field(default_factory=dict)  # reason -> count

    @property
    def candidates(self) -> int:
        return int(np.size(self.feasible))

    def columns(self) -> dict:
        """The flat (layout x batch) points as an objective's columns (answers.objectives.TOKENS_PER_CHIP)."""
        shape = np.shape(self.feasible)
        flat = lambda x: np.ravel(np.broadcast_to(x, shape))  # noqa: E731
        return {"feasible": flat(self.feasible), "tokens_per_s_per_chip": flat(self.decode.tokens_per_s_per_chip),
                "tokens_per_s_per_user": flat(self.decode.tokens_per_s_per_user)}

    def layout(self, i: int) -> Layout:
        return self.layouts.at((np.shape(self.feasible)[0],), i // np.shape(self.feasible)[1])

    def row(self, i: int) -> dict:
        r, shape = self.decode, np.shape(self.feasible)
        lay = self.layout(i)
        g = lambda x: float(np.ravel(np.broadcast_to(x, shape))[i])  # noqa: E731
        out = {"plan": lay.label(), **{k: v for k, v in lay.as_dict().items() if k != "label"},
               "batch": int(g(r.batch)), "ttft_s": float(self.ttft_s[i // shape[1]])}
        out.update({k: g(getattr(r, k)) for k in ROW_KEYS})
        out["usd_per_mtok"] = g(self.deployment.usd_per_mtok(r))
        out["bound"] = BOUNDS[int(g(r.bound))]
        out["why"] = why_not(r, _column(self.layouts), i)
        return out


def pareto(per_chip: np.ndarray, per_user: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both axes, ordered by tokens/s per user (descending)."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return idx
    x, y = per_chip.ravel()[idx], per_user.ravel()[idx]
    if idx.size > 4096:  # drop, in O(n), points beaten on x by a point in a strictly higher bin of log(y)
        lb = np.floor(np.log2(y) * 16.0)
        lb = (lb - lb.min()).astype(np.int64)
        best = np.full(int(lb.max()) + 2, -np.inf)
        np.maximum.at(best, lb, x)
        above = np.maximum.accumulate(best[::-1])[::-1][1:]  # max x over the bins above each bin
        keep = x >= above[lb]
        idx, x, y = idx[keep], x[keep], y[keep]
    order = np.lexsort((-x, -y))
    x_sorted = x[order]
    prev_best = np.concatenate([[-np.inf], np.maximum.accumulate(x_sorted)[:-1]])
    return idx[order[x_sorted > prev_best]]


def _inputs(dep: Deployment, lay: Layout, batch, context, len_pass, hop_latency_s=None) -> tuple:
    """engine.evaluate's arguments for ``dep`` on ``lay`` at the pass points: the search calls the engine itself
    (``engine.evaluate(*_inputs(...))``), no wrapper frame between (serve's hops to the engine,
    tests/cli/test_serve_hops.py)."""
    return (dep.shape, dep.topo, dep.peaks, lay, dep.precision,
            engine.Pass(batch, context, len_pass, hop_latency_s=hop_latency_s), dep.eff)


def search(dep: Deployment, *, chips: int, constraints: Constraints = Constraints(), batches=None,
           layouts: Layout | None = None, hop_latency_s=None) -> SearchResult:
    """Evaluate every candidate layout x batch once (decode) plus one prefill per layout (TTFT), through the engine
    under ``dep``'s dtypes and efficiency set (``dep.layout`` is ignored)."""
    P = layouts or candidate_layouts(dep.shape, chips, dep.topo.domain_size)
    Bs = default_batches() if batches is None else np.asarray(batches, dtype=float)
    C = float(constraints.context)
    dec = engine.evaluate(*_inputs(dep, _column(P), Bs[None, :], C, 1.0, hop_latency_s))
    one = Layout(P.tp, P.ep, P.pp, P.dp, P.attn_dp, P.kv_batch, microbatches=1, redundant_experts=P.redundant_experts)
    prompts = _inputs(dep, one, np.asarray(P.dp, dtype=float), C, C, hop_latency_s)  # one prompt per replica
    ttft = np.asarray(engine.evaluate(*prompts).step_s)
    ok = dec.reason == 0
    fast = dec.tokens_per_s_per_user >= constraints.min_tokens_per_s_per_user
    quick = ttft[:, None] <= constraints.max_ttft_s
    feasible = ok & fast & quick
    per_chip, per_user = dec.tokens_per_s_per_chip, dec.tokens_per_s_per_user
    front = pareto(per_chip, per_user, feasible)
    counts = np.bincount(np.ravel(dec.reason), minlength=len(REASONS))
    rejected = {REASONS[c]: int(counts[c]) for c in range(1, len(REASONS)) if counts[c]}
    for name, n in zip(SLO_REASONS, (np.count_nonzero(ok & ~fast), np.count_nonzero(ok & fast & ~quick))):
        if n:
            rejected[name] = int(n)
    return SearchResult(dep, P, Bs, dec, ttft, feasible, front, rejected)


def memory_share(r: PassTerms) -> np.ndarray:
    """Memory per chip over the usable HBM at each point (above 1: does not fit), at the reason's shape."""
    return np.broadcast_to(np.asarray(r.memory_per_chip_bytes / r.hbm_bytes, float), np.shape(r.reason))


def exact_layouts(dep: Deployment, chips: int) -> Layout:
    """The valid layouts using exactly ``chips`` chips (a question's default is chosen among them); ValueError
    naming ``chips`` where there is none."""
    P = candidate_layouts(dep.shape, chips, dep.topo.domain_size, exact=True)
    if np.size(P.tp) == 0:
        raise ValueError(f"chips: no valid layout of {dep.model.name} uses exactly {chips} chips")
    return P


def run_layouts(dep: Deployment, P: Layout, batch, context, len_pass=1) -> PassTerms:
    """Every layout of the flat ``P`` at every (batch, context, len_pass) point: PassTerms [layout, point]."""
    B, C, S = (np.ravel(np.asarray(x, dtype=float)) for x in np.broadcast_arrays(batch, context, len_pass))
    return engine.evaluate(*_inputs(dep, _column(P), B[None, :], C[None, :], S[None, :]))


def critical_path_line(r: PassTerms, g) -> str:
    """The stage's critical path as a sum that adds up (core/engine.py): the larger of compute and memory, the
    smaller's unhidden part, the comms (EP net of two-batch overlap), the kernels' floor, the host work net of what
    the GPU hides; ``g`` reads the point's value of an array."""
    top, name = max((g(r.compute_s), "compute"), (g(r.memory_s), "memory"))
    parts = [f"{name} {fmt_seconds(top)}", f"phi*min {fmt_seconds(g(r.overlap_s))}",
             f"TP {fmt_seconds(g(r.tp_comm_s))}"]
    if g(r.ep_comm_s) or g(r.ep_hidden_s):
        parts.append(f"EP {fmt_seconds(g(r.ep_comm_s) + g(r.ep_hidden_s))} - two-batch overlap "
                     f"{fmt_seconds(g(r.ep_hidden_s))}")
    parts += [f"floor {fmt_seconds(g(r.floor_s))}",
              f"host {fmt_seconds(g(r.host_work_s))} - hidden under the GPU {fmt_seconds(g(r.host_hidden_s))}"]
    return f"  critical path: t_stage = {' + '.join(parts)} = {fmt_seconds(g(r.stage_s))}"


def explain_plan(dep: Deployment, plans: Layout, r: PassTerms, i: int) -> list[str]:
    """The derivation of point ``i`` (flat index over ``r``'s shape), formula = numbers = value."""
    shape, topo, peak_flops_per_s = dep.shape, dep.topo, dep.peaks.flops_per_s
    shp = np.shape(r.reason)
    g = lambda x: float(np.ravel(np.broadcast_to(x, shp))[i])  # noqa: E731
    p = plans.at(shp, i)
    tp, ep, pp, dp = int(p.tp), int(p.ep), int(p.pp), int(p.dp)
    L, n = shape.num_layers, int(g(r.chips))
    B, C, S, b = g(r.batch), g(r.context), g(r.len_pass), g(r.micro_batch)
    M = pp if p.microbatches is None else int(p.microbatches)
    stage_layers = math.ceil(L / pp)
    out = [f"[bold]{shape.name} on {n} x {topo.chip.name} ({topo.name}, scale-up domain {topo.domain_size}): "
           f"{p.label()}, batch {B:g}, context {C:g}, {S:g} new token(s) per sequence[/bold]",
           f"  layout: dp {dp} replicas x pp {pp} stages x (tp {tp} x ep {ep}) chips; a stage holds ceil(L/pp) = "
           f"{stage_layers} of {L} layers; micro-batches M = {M}, b = B/(dp*M) = {b:g} sequences",
           f"  memory per chip = weights {fmt_bytes(g(r.weight_bytes_per_chip))} + KV (B/dp)*kv(C)*f/kv_split "
           f"{fmt_bytes(g(r.kv_bytes_per_chip))} + activations {fmt_bytes(g(r.act_bytes_per_chip))} = "
           f"{fmt_bytes(g(r.memory_per_chip_bytes))} of {fmt_bytes(g(r.hbm_bytes))} usable"]
    if g(r.reason):
        return out + [f"  [red]not evaluated: {why_not(r, plans, i)}[/red]"]
    out += [f"  efficiency: {efficiency_terms(dep)}",
            f"  per stage and micro-batch: compute {fmt_seconds(g(r.compute_s))} (peak {fmt_si(peak_flops_per_s)}FLOP/s),"
            f" HBM {fmt_seconds(g(r.memory_s))}, TP all-reduce/all-to-all {fmt_seconds(g(r.tp_comm_s))}, EP dispatch"
            f"+combine {fmt_seconds(g(r.ep_comm_s))}",
            f"  t_stage = GPU + host - h*min(GPU, host), GPU = max(compute, memory) + phi*min + comms (EP less "
            f"eps*min(EP, kernels)) + (1+eps)*kernels*kappa; overhead (the floor + the exposed host time) "
            f"{fmt_seconds(g(r.overhead_s))}; t_stage = {fmt_seconds(g(r.stage_s))}; hop "
            f"{fmt_seconds(g(r.hop_s))} x {g(r.hops):g} per pass "
            f"({'scale-out' if pp * tp * ep > topo.domain_size else 'scale-up'})"]
    out.append(critical_path_line(r, g))
    form = "max(M*t_stage, pp*t_stage + hops*t_hop)" if S <= 1 else "(M+pp-1)*t_stage + hops*t_hop"
    out += [f"  {'TPOT' if S <= 1 else 'pass latency'} = {form} = {fmt_seconds(g(r.step_s))}; binding: "
            f"{BOUNDS[int(g(r.bound))]}",
            f"  tokens/s = B*S/step = {fmt_si(g(r.tokens_per_s))} ({g(r.tokens_per_s_per_chip):.4g} per chip, "
            f"{g(r.tokens_per_s_per_user):.4g} per user); MFU {100 * g(r.mfu):.1f}%"]
    if shape.coeffs.moe_layers and pp > 1:
        out.append(f"  rack hop: t_scaleup/t_scaleout = 2*k*layers_per_stage*bw_out/bw_up = {g(r.rack_hop_ratio):.3g}"
                   f" ({'OK' if g(r.rack_hop_ratio) >= 1 else 'the hop binds'}; lecture section 2.8)")
    return out
