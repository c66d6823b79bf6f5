"""Layout search: every valid plan x batch in one vectorised pass -> the Pareto front under SLOs.

Candidates: tp | attention heads, ep | routed experts (MoE only), pp <= layers, dp, from the powers of two and the
divisors of the chip budget and of the scale-up domain, with tp·ep·pp·dp <= budget; for ep > 1 attention
data-parallel (DeepSeek) or tensor-parallel; head- or batch-sharded KV when the attention group outnumbers the KV
heads. Each plan is crossed with every batch. Decode at the given context gives tokens/s per chip and per user
(1/TPOT); TTFT is one prompt of ``context`` tokens through the same plan (no queueing). The front maximises
tokens/s per chip and tokens/s per user over the candidates that fit and meet the constraints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tokenomy.core.roofline import Efficiency, HwCoeffs
from tokenomy.parallel.plan import BOUNDS, REASONS, ModelShape, PlanResult, Plans, evaluate, why_not
from tokenomy.parallel.topology import Topology
from tokenomy.units import fmt_bytes, fmt_seconds, fmt_si

SLO_REASONS = ("below the minimum tokens/s per user", "TTFT above the maximum")
ROW_KEYS = ("tokens_per_s_per_chip", "tokens_per_s_per_user", "step_s", "compute_s", "memory_s", "tp_comm_s",
            "ep_comm_s", "hop_s", "mfu", "memory_per_chip_bytes", "weight_bytes_per_chip", "kv_bytes_per_chip",
            "micro_batch", "rack_hop_ratio")


@dataclass(frozen=True)
class Constraints:
    context: float = 8192.0
    min_tokens_per_s_per_user: float = 0.0
    max_ttft_s: float = math.inf

    def __post_init__(self) -> None:
        if not self.context > 0:
            raise ValueError(f"context must be a positive number of tokens, got {self.context}")
        if self.min_tokens_per_s_per_user < 0 or not self.max_ttft_s > 0:
            raise ValueError("min tokens/s per user must be >= 0 and max TTFT > 0")


def _degrees(limit: int, *extra: int) -> np.ndarray:
    out = {1 << i for i in range(int(limit).bit_length())}
    for x in extra:
        out |= {d for d in range(1, x + 1) if x % d == 0}
    return np.array(sorted(d for d in out if d <= limit), dtype=np.int64)


def candidate_plans(shape: ModelShape, chips: int, domain_size: int) -> Plans:
    """Structurally valid plans using at most ``chips`` chips (flat arrays)."""
    if chips <= 0:
        raise ValueError(f"chips must be a positive integer, got {chips}")
    m, deg = shape.coeffs, _degrees(chips, chips, domain_size)
    moe = bool(m.moe_layers)
    tp = deg[shape.num_heads % deg == 0]
    ep = deg[(float(m.num_experts) % deg == 0)] if moe else np.array([1])
    pp = deg[deg <= shape.num_layers]
    g = np.stack(np.meshgrid(tp, ep, pp, deg, [0, 1], [0, 1], indexing="ij"), -1).reshape(-1, 6)
    t, e, p, d, ad, kb = g.T
    a = np.where((e > 1) & (ad == 1), t, t * e)
    keep = ((t * e * p * d <= chips) & ((e > 1) | (ad == 1)) & (shape.num_heads % a == 0)
            & ((kb == 0) | (a > shape.kv_heads)))
    t, e, p, d, ad, kb = (x[keep] for x in (t, e, p, d, ad, kb))
    return Plans(t, e, p, d, ad.astype(bool), kb.astype(bool))


def default_batches(max_batch: int = 65536) -> np.ndarray:
    """1, 2, 3, 4, 6, 8, ... : powers of two and 1.5x between them."""
    b = np.unique(np.concatenate([2.0 ** np.arange(17), 1.5 * 2.0 ** np.arange(16)]))
    return b[b <= max_batch]


@dataclass(frozen=True)
class SearchResult:
    plans: Plans  # candidate plans, shape (P,)
    batches: np.ndarray  # shape (B,)
    decode: PlanResult  # shape (P, B)
    ttft_s: np.ndarray  # shape (P,)
    feasible: np.ndarray  # shape (P, B)
    front: np.ndarray  # flat indices into (P, B), most tokens/s per user first
    best: int | None  # flat index with the most tokens/s per chip among the feasible
    rejected: dict = field(default_factory=dict)  # reason -> count

    @property
    def candidates(self) -> int:
        return int(np.size(self.feasible))

    def row(self, i: int) -> dict:
        P, Bn = np.shape(self.feasible)
        p = self.plans.at((P,), i // Bn)
        r, shape = self.decode, (P, Bn)
        g = lambda x: float(np.ravel(np.broadcast_to(x, shape))[i])  # noqa: E731
        out = {"plan": p.label(), "tp": p.tp, "ep": p.ep, "pp": p.pp, "dp": p.dp, "attn_dp": bool(p.attn_dp and p.ep > 1),
               "kv_batch": bool(p.kv_batch), "chips": int(g(r.chips)), "batch": int(g(r.batch)),
               "ttft_s": float(self.ttft_s[i // Bn])}
        out.update({k: g(getattr(r, k)) for k in ROW_KEYS})
        out["bound"] = BOUNDS[int(g(r.bound))]
        out["why"] = why_not(r, self.plans, i)
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


def search(shape: ModelShape, topo: Topology, hw: HwCoeffs, *, chips: int, constraints: Constraints = Constraints(),
           batches=None, plans: Plans | None = None, eff: Efficiency = Efficiency(), **kw) -> SearchResult:
    """Evaluate every candidate plan x batch once (decode) plus one prefill per plan (TTFT); keyword arguments go to
    ``plan.evaluate`` (weight_bytes_per_param, kv_bytes_per_elem, hop_latency_s, ...)."""
    P = plans or candidate_plans(shape, chips, topo.domain_size)
    Bs = default_batches() if batches is None else np.asarray(batches, dtype=float)
    col = lambda x: np.asarray(x)[:, None]  # noqa: E731
    grid = Plans(col(P.tp), col(P.ep), col(P.pp), col(P.dp), col(P.attn_dp), col(P.kv_batch))
    C = float(constraints.context)
    dec = evaluate(shape, topo, hw, grid, Bs[None, :], C, 1.0, eff=eff, **kw)
    one = Plans(P.tp, P.ep, P.pp, P.dp, P.attn_dp, P.kv_batch, microbatches=1)
    pre = evaluate(shape, topo, hw, one, np.asarray(P.dp, dtype=float), C, C, eff=eff, **kw)
    ttft = np.asarray(pre.step_s)
    ok = dec.reason == 0
    fast = dec.tokens_per_s_per_user >= constraints.min_tokens_per_s_per_user
    quick = ttft[:, None] <= constraints.max_ttft_s
    feasible = ok & fast & quick
    per_chip, per_user = dec.tokens_per_s_per_chip, dec.tokens_per_s_per_user
    front = pareto(per_chip, per_user, feasible)
    best = int(front[np.argmax(per_chip.ravel()[front])]) if front.size else None
    counts = np.bincount(np.ravel(dec.reason), minlength=len(REASONS))
    rejected = {REASONS[c]: int(counts[c]) for c in range(1, len(REASONS)) if counts[c]}
    for name, n in zip(SLO_REASONS, (np.count_nonzero(ok & ~fast), np.count_nonzero(ok & fast & ~quick))):
        if n:
            rejected[name] = int(n)
    return SearchResult(P, Bs, dec, ttft, feasible, front, best, rejected)


def explain_plan(shape: ModelShape, topo: Topology, plans: Plans, r: PlanResult, i: int,
                 peak_flops_per_s: float) -> list[str]:
    """The derivation of point ``i`` (flat index over ``r``'s shape), formula = numbers = value."""
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
    out += [f"  per stage and micro-batch: compute {fmt_seconds(g(r.compute_s))} (peak {fmt_si(peak_flops_per_s)}FLOP/s),"
            f" HBM {fmt_seconds(g(r.memory_s))}, TP all-reduce/all-to-all {fmt_seconds(g(r.tp_comm_s))}, EP dispatch"
            f"+combine {fmt_seconds(g(r.ep_comm_s))}",
            f"  t_stage = max(compute, memory) + comms + overhead = {fmt_seconds(g(r.stage_s))}; hop "
            f"{fmt_seconds(g(r.hop_s))} x {g(r.hops):g} per pass "
            f"({'scale-out' if pp * tp * ep > topo.domain_size else 'scale-up'})"]
    form = "max(M*t_stage, pp*t_stage + hops*t_hop)" if S <= 1 else "(M+pp-1)*t_stage + hops*t_hop"
    out += [f"  {'TPOT' if S <= 1 else 'pass latency'} = {form} = {fmt_seconds(g(r.step_s))}; binding: "
            f"{BOUNDS[int(g(r.bound))]}",
            f"  tokens/s = B*S/step = {fmt_si(g(r.tokens_per_s))} ({g(r.tokens_per_s_per_chip):.4g} per chip, "
            f"{g(r.tokens_per_s_per_user):.4g} per user); MFU {100 * g(r.mfu):.1f}%"]
    if shape.coeffs.moe_layers and pp > 1:
        out.append(f"  rack hop: t_scaleup/t_scaleout = 2*k*layers_per_stage*bw_out/bw_up = {g(r.rack_hop_ratio):.3g}"
                   f" ({'OK' if g(r.rack_hop_ratio) >= 1 else 'the hop binds'}; lecture section 2.8)")
    return out
