"""Batch economics: cost and speed of decode vs batch size (lecture §2.1-2.2, §2.4).

The lecture's blackboard model, in its own units (FLOPs counts multiplies, weights in bytes):
    t_compute = B·N_active / FLOPs        t_weights = N_total / mem_bw        t_KV = B·len_ctx·bytes_tok / mem_bw
    t = max(t_compute, t_weights + t_KV)   cost/token ∝ t / B
    R = FLOPs/mem_bw = (peak_FLOP_per_s/2)·bytes_per_weight / HBM_bytes_per_s        (≈300 on H100/Blackwell)
    balance batch B* = R·N_total/N_active  (weight fetch = weight multiply)
and the same questions asked of the engine (core.engine via ``Serving.terms``: the deployment's layout and efficiency
set, the roofline bound beside each step) on real models and chips.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from tokenomy.core.engine import BOUNDS
from tokenomy.econ.cost import Serving, Terms, first_crossing, largest_whole, largest_whole_each

PRACTICAL_FACTORS = (2.0, 3.0)  # lecture §2.2: "take this and maybe double or triple it"
BATCH_SEARCH_MAX = 1e8


# ---- the blackboard model (lecture units) ---------------------------------------------------------------


def lecture_ratio(peak_flops_per_s, bytes_per_weight, hbm_bytes_per_s):
    """R = (peak/2)·bytes_per_weight / HBM_bw: the lecture's dimensionless FLOPs/mem_bw (§2.1 units note)."""
    return np.asarray(peak_flops_per_s, float) / 2.0 * np.asarray(bytes_per_weight, float) / \
        np.asarray(hbm_bytes_per_s, float)


def balance_batch(ratio, sparsity=1.0):
    """B* = R · N_total/N_active: weight fetch time = weight multiply time, KV ignored (§2.2)."""
    return np.asarray(ratio, float) * np.asarray(sparsity, float)


def balance_batch_with_kv(ratio, sparsity, context, bytes_per_token, active_bytes):
    """Balance including KV traffic: N_total + B·C·b = B·N_active/R  ⇒  B = N_total / (N_active/R − C·b).

    Larger than B* (the lecture: "the optimal batch should grow larger"); inf when one sequence's KV fetch
    outweighs its compute (the pass can never become compute-bound)."""
    active = np.asarray(active_bytes, float)
    denom = active / np.asarray(ratio, float) - np.asarray(context, float) * np.asarray(bytes_per_token, float)
    with np.errstate(divide="ignore"):
        return np.where(denom > 0, np.asarray(sparsity, float) * active / np.where(denom > 0, denom, 1.0), np.inf)


def practical_batch(balance, factors=PRACTICAL_FACTORS):
    """The lecture's practical operating range: 2-3 × the balance batch (real efficiency < roofline)."""
    b = np.asarray(balance, float)
    return b * factors[0], b * factors[1]


@dataclass(frozen=True)
class Blackboard:
    """t_compute, t_weights, t_KV of the lecture model; seconds if FLOPs and mem_bw are per second."""

    t_compute: object
    t_weights: object
    t_kv: object
    step_s: object
    seconds_per_token: object  # step / B: cost per token in chip-seconds

    @property
    def mfu(self):
        return self.t_compute / self.step_s


def blackboard(batch, *, flops, mem_bw, total_bytes, active_bytes, context=0.0, bytes_per_token=0.0) -> Blackboard:
    """The lecture's two-term roofline (§2.1): flops in weight-byte multiplies per second, weights in bytes."""
    B = np.asarray(batch, float)
    t_c = B * active_bytes / flops
    t_w = np.broadcast_to(np.asarray(total_bytes / mem_bw, float), np.shape(t_c))
    t_kv = B * np.asarray(context, float) * bytes_per_token / mem_bw
    step = np.maximum(t_c, t_w + t_kv)
    return Blackboard(t_c, t_w, t_kv, step, step / B)


def unbatched_penalty(ratio, sparsity=1.0):
    """cost(B=1)/cost(B→∞), KV ignored: t_weights / t_compute(B=1) = R·sparsity (lecture L25, "~1000× worse")."""
    # Units with mem_bw = 1 and N_active = 1 byte: FLOPs = R, N_total = sparsity.
    kw = dict(flops=np.asarray(ratio, float), mem_bw=1.0, total_bytes=np.asarray(sparsity, float), active_bytes=1.0)
    return blackboard(1.0, **kw).seconds_per_token / blackboard(1e15, **kw).seconds_per_token


# ---- the engine: a sweep over batch and its summary -----------------------------------------------------


def batch_rows(t: Terms) -> list[dict]:
    """One dict per batch of a decode sweep at one context (CLI/JSON keys, SI units in the names)."""
    out = []
    for i in range(np.size(t.step_s)):
        g = lambda x: float(np.ravel(x)[i])  # noqa: E731
        fits = bool(np.ravel(t.fits)[i])
        val = (lambda x: g(x) if fits else None)
        out.append({
            "batch": int(g(t.batch)), "context": int(g(t.context)), "step_s": val(t.step_s),
            "roofline_step_s": val(t.roofline_step_s), "compute_s": g(t.compute_s), "matmul_s": g(t.matmul_s),
            "attention_s": g(t.attention_s), "weights_s": g(t.weights_s), "kv_s": g(t.kv_s), "other_s": g(t.other_s),
            "comms_s": g(t.comms_s), "overhead_s": g(t.overhead_s),
            "bound": BOUNDS[int(np.ravel(t.bound)[i])] if fits else None,
            "tokens_per_s_per_chip": val(t.tokens_per_s_per_chip),
            "tokens_per_s_per_user": val(t.tokens_per_s_per_user),
            "usd_per_mtok": val(t.usd_per_mtok), "mfu": val(t.mfu),
            "memory_per_chip_bytes": g(t.memory_per_chip_bytes), "fits": fits, "why": t.why(i),
        })
    return out


def max_batch_fit(sv: Serving, context: float) -> int:
    """Largest whole batch whose weights + KV + activations fit in usable HBM at ``context`` (0 if none); memory
    per chip grows with the batch, so a doubling search and a bisection find the edge."""
    def ok(b):
        return sv.memory_fits(b, context)[0]
    return largest_whole(ok, int(BATCH_SEARCH_MAX))


def max_batch_fits(sv: Serving, contexts) -> list[int]:
    """``max_batch_fit`` at each of ``contexts``, all searched together (cost.largest_whole_each: one memory pass
    per round over the batches x contexts grid, not one search per context)."""
    C = np.asarray(contexts, float)
    return [int(b) for b in largest_whole_each(lambda b: sv.memory_fits(b, C)[0], int(BATCH_SEARCH_MAX), C.size)]


def engine_balance_batch(sv: Serving, context: float, with_kv: bool) -> float | None:
    """Batch where the engine's compute catches up with memory traffic, on ``sv``'s layout at the roofline (the
    balance point is a roofline quantity: measured GEMM efficiency at a few rows would blur it; the operating point
    then takes the lecture's 2x for real efficiency).

    with_kv=False: weight matmul time = weight fetch time (experts touched grow with batch);
    with_kv=True: all compute (matmuls + attention, which grows with the context like the KV does) = all memory
    traffic (weights + KV + activations). None: never within 1e8 sequences."""
    bound = sv.roofline()

    def f(b):  # with KV: terms' compute_s and memory_s are its unmasked pass's alone (Serving.unmasked)
        if with_kv:
            t = bound.unmasked(b, context)
            return np.broadcast_to(t.compute_s - t.memory_s, np.shape(b))
        t = bound.terms(b, context)
        return t.matmul_s - t.weights_s
    return first_crossing(f, 1.0, BATCH_SEARCH_MAX)


@dataclass(frozen=True)
class BatchSummary:
    """The batch economics of one model on one hardware at one context (SI units, None where undefined)."""

    model: str
    hardware: str
    chips: int
    context: int
    usd_per_chip_hour: float
    lecture_ratio: float  # R of this chip at the compute dtype and the weights' bytes/param
    sparsity: float  # N_total / N_active (matmul parameters)
    lecture_balance_batch: float  # R · sparsity
    balance_batch: float | None  # engine: weight matmul = weight fetch
    balance_batch_with_kv: float | None  # engine: compute = all memory traffic
    max_batch_fit: int
    operating_batch: int | None  # 2 × balance (the lecture's "double it"), capped by memory
    memory_binds: bool  # the fit cap is below the lecture's 2× balance
    cost_floor_usd_per_mtok: float  # B → ∞ with memory ignored: max(compute, KV) per token
    cost_batch1_usd_per_mtok: float | None
    unbatched_penalty: float | None  # cost(B=1) / floor
    unbatched_penalty_no_kv: float | None  # the same at a 1-token context (KV ignored, as the lecture does)
    lecture_unbatched_penalty: float  # R · sparsity (every expert read at B=1)
    operating_step_s: float | None
    worst_case_latency_s: float | None  # wait one step + run one step (train departure, §2.3)
    operating_tokens_per_s: float | None
    usd_per_mtok_at_operating: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def _operating(sv: Serving, context: float) -> tuple:
    """(balance batch without KV, max_batch_fit, the lecture's practical target PRACTICAL_FACTORS[0] x the balance
    batch, the operating batch: the target where it fits, else the largest batch that fits; None if none fits)."""
    b_w = engine_balance_batch(sv, context, with_kv=False)
    fit = max_batch_fit(sv, context)
    target = None if b_w is None else int(np.ceil(PRACTICAL_FACTORS[0] * b_w))
    return b_w, fit, target, None if fit == 0 else (fit if target is None else min(target, fit))


def operating_batch(sv: Serving, context: float) -> int | None:
    """summarize_batch's operating batch alone (``_operating``), without the KV balance and the cost points."""
    return _operating(sv, context)[3]


def summarize_batch(sv: Serving, context: float) -> BatchSummary:
    """Balance batches, fit cap, operating point, cost floor and unbatched penalty (engine + lecture form)."""
    from tokenomy.arch.params import count_params, weight_bytes

    p = count_params(sv.model)
    bpw = weight_bytes(sv.model, sv.weight_dtype) / p.total  # mean stored bytes per weight
    R = float(lecture_ratio(sv.peaks.flops_per_s, bpw, sv.peaks.hbm_bytes_per_s))
    sparsity = p.total / p.active
    b_w, fit, target, op = _operating(sv, context)
    b_kv = engine_balance_batch(sv, context, with_kv=True)
    big = sv.terms(1e12, context)  # per-token floor: weights amortised away
    floor = float(np.ravel(big.usd_per_mtok)[0])
    t1 = sv.terms(1.0, context)
    c1 = float(t1.usd_per_mtok) if bool(t1.fits) else None
    n1, ninf = sv.terms(1.0, 1.0), sv.terms(1e12, 1.0)
    no_kv = float(n1.usd_per_mtok / ninf.usd_per_mtok) if bool(n1.fits) else None
    top = sv.terms(float(op), context) if op else None
    at = (lambda x: float(np.ravel(x)[0]) if top is not None else None)
    return BatchSummary(
        model=sv.model.name, hardware=sv.hardware.name, chips=sv.chips, context=int(context),
        usd_per_chip_hour=sv.price, lecture_ratio=R, sparsity=sparsity,
        lecture_balance_batch=float(balance_batch(R, sparsity)), balance_batch=b_w, balance_batch_with_kv=b_kv,
        max_batch_fit=fit, operating_batch=op, memory_binds=target is not None and fit < target,
        cost_floor_usd_per_mtok=floor, cost_batch1_usd_per_mtok=c1,
        unbatched_penalty=None if c1 is None else c1 / floor, unbatched_penalty_no_kv=no_kv,
        lecture_unbatched_penalty=float(unbatched_penalty(R, sparsity)),
        operating_step_s=at(top.step_s) if top else None,
        worst_case_latency_s=2 * at(top.step_s) if top else None,
        operating_tokens_per_s=at(top.tokens_per_s) if top else None,
        usd_per_mtok_at_operating=at(top.usd_per_mtok) if top else None)
