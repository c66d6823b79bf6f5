"""Context length: where decode turns from compute- to memory-bound (lecture §2.5, §2.11).

Lecture units (weights in bytes, R = FLOPs/mem_bw):
    crossover (large B, weights amortised):  len* = N_active / (R · bytes_tok)
    at batch B:  B·N_active/R = N_total + B·len·bytes_tok  ⇒  len = (N_active/R − N_total/B) / bytes_tok
    MFU(len) = t_compute / max(t_compute, t_weights + t_KV)        (200k at len* = 100k → 50 %)
    inverse: a price step at len* implies bytes_tok = N_active / (R · len*)   (100e9/(300·200e3) = 1,667 B)
    sparse attention: KV positions read ≈ c·len^p (p = ½ in "some of the DeepSeek papers"), capped at len
The engine versions ask core.engine (through ``Serving.terms``) on the deployment's layout and efficiency set.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from tokenomy.core.engine import BOUNDS
from tokenomy.econ.cost import Serving, first_crossing, largest_whole

CONTEXT_SEARCH_MAX = 1e9


def crossover_context(active_bytes, ratio, bytes_per_token):
    """len* = N_active/(R·bytes_tok): KV fetch = weight compute per sequence, weights amortised (§2.5)."""
    return np.asarray(active_bytes, float) / (np.asarray(ratio, float) * np.asarray(bytes_per_token, float))


def crossover_context_at_batch(batch, active_bytes, total_bytes, ratio, bytes_per_token):
    """Crossover at a finite batch: the weight fetch eats into the KV budget. NaN when B is below the balance
    batch (memory-bound at every context)."""
    B = np.asarray(batch, float)
    x = (np.asarray(active_bytes, float) / np.asarray(ratio, float) - np.asarray(total_bytes, float) / B) / \
        np.asarray(bytes_per_token, float)
    return np.where(x > 0, x, np.nan)


def implied_kv_bytes_per_token(active_bytes, ratio, step_context):
    """Inverse problem (§2.11): a price step placed at the crossover len* implies bytes_tok = N_active/(R·len*)."""
    return np.asarray(active_bytes, float) / (np.asarray(ratio, float) * np.asarray(step_context, float))


def mfu_at_context(context, crossover, weight_fraction=0.0):
    """MFU = t_compute / max(t_compute, t_weights + t_KV) with t_KV/t_compute = len/len* and
    t_weights/t_compute = ``weight_fraction`` (0: weights negligible at large batch)."""
    kv = np.asarray(context, float) / np.asarray(crossover, float)
    return 1.0 / np.maximum(1.0, np.asarray(weight_fraction, float) + kv)


def sparse_kv_fraction(context, const, exponent=0.5):
    """Fraction of the context a sparse-attention decode step reads: min(len, c·len^p) / len."""
    C = np.asarray(context, float)
    return np.minimum(C, float(const) * C ** float(exponent)) / C


def kv_bytes_per_token_formula(unique_layers, kv_heads, head_dim, bytes_per_elem):
    """bytes_tok = layers · 2 (K and V) · d_head · n_KV_heads · bytes (§2.11 sanity check: 1·2·128·8·1 = 2,048)."""
    return float(unique_layers) * 2.0 * float(head_dim) * float(kv_heads) * float(bytes_per_elem)


# ---- the engine -----------------------------------------------------------------------------------------


def _frac(context, sparse_const, sparse_exponent):
    return 1.0 if sparse_const is None else sparse_kv_fraction(context, sparse_const, sparse_exponent)


def engine_crossover(sv: Serving, batch: float | None = None, sparse_const=None, sparse_exponent=0.5) -> float | None:
    """Context where the engine's memory time reaches its compute time on ``sv``'s layout at the roofline (a balance
    point, like the balance batch). ``batch=None``: the large-batch limit (per-sequence terms only, weights
    amortised; the roofline terms are linear in the batch). None when memory never catches up below 1e9 tokens, or when it already exceeds
    compute at a 1-token context (a batch below the balance batch: memory-bound at every length)."""
    bound = sv.roofline()

    def f(C):  # terms' kv_s, other_s, memory_s and compute_s are its unmasked pass's (Serving.unmasked)
        fr = _frac(C, sparse_const, sparse_exponent)
        if batch is None:
            t = bound.unmasked(1.0, C, kv_read_fraction=fr)
            return np.broadcast_to(t.kv_s + t.act_s - t.compute_s, np.shape(C))
        t = bound.unmasked(batch, C, kv_read_fraction=fr)
        return np.broadcast_to(t.memory_s - t.compute_s, np.shape(C))
    if float(np.ravel(f(np.array([1.0])))[0]) >= 0:
        return None
    return first_crossing(f, 1.0, CONTEXT_SEARCH_MAX)


def attention_share_context(sv: Serving, share: float = 1.0) -> float | None:
    """Context where the (quadratic-in-sequence) attention FLOPs reach ``share`` × the weight-matmul FLOPs of a
    decode token (a FLOP ratio: ``sv``'s layout at the roofline): where the lecture's "you notice it only up in the
    millions of tokens" is tested."""
    bound = sv.roofline()

    def f(C):
        t = bound.terms(1.0, C)
        return t.attention_s - share * t.matmul_s
    return first_crossing(f, 1.0, CONTEXT_SEARCH_MAX)


def max_context_fit(sv: Serving, batch: float) -> int:
    """Largest context (tokens) at which ``batch`` sequences fit in usable HBM on ``sv``'s layout and the layout
    can run that batch at all (e.g. not fewer sequences than dp x micro-batches); 0 if none."""
    def ok(C):
        fits, runs = sv.memory_fits(batch, C)
        return fits & runs
    return largest_whole(ok, int(CONTEXT_SEARCH_MAX))


def goldilocks(context, compute_s, memory_s, band: float = 2.0) -> tuple[float | None, float | None]:
    """Contexts where both compute and memory bandwidth are at least 1/band busy (the balanced zone):
    min(compute, memory)/max(compute, memory) ≥ 1/band. Returns (lo, hi) over the given grid."""
    c, m = np.asarray(compute_s, float), np.asarray(memory_s, float)
    ok = np.minimum(c, m) * band >= np.maximum(c, m)  # False where NaN (does not fit)
    ctx = np.asarray(context, float)[ok]
    return (float(ctx.min()), float(ctx.max())) if ctx.size else (None, None)


def context_rows(sv: Serving, batch: float, contexts, sparse_const=None, sparse_exponent=0.5) -> list[dict]:
    """MFU and the terms vs context at one batch (engine)."""
    C = np.asarray(contexts, float)
    t = sv.terms(batch, C, kv_read_fraction=_frac(C, sparse_const, sparse_exponent))
    rows = []
    for i, ctx in enumerate(C):
        ok = bool(t.fits[i])
        g = lambda x: float(x[i]) if ok else None  # noqa: E731
        rows.append({"context": int(ctx), "batch": int(batch), "step_s": g(t.step_s),
                     "roofline_step_s": g(t.roofline_step_s), "compute_s": float(t.compute_s[i]),
                     "attention_s": float(t.attention_s[i]), "weights_s": float(t.weights_s[i]),
                     "kv_s": float(t.kv_s[i]), "comms_s": float(t.comms_s[i]),
                     "bound": BOUNDS[int(t.bound[i])] if ok else None, "mfu": g(t.mfu),
                     "usd_per_mtok": g(t.usd_per_mtok), "memory_per_chip_bytes": float(t.memory_per_chip_bytes[i]),
                     "fits": ok, "why": t.why(i)})
    return rows


@dataclass(frozen=True)
class ContextSummary:
    model: str
    hardware: str
    chips: int
    batch: int
    kv_bytes_per_token: float
    crossover_large_batch: float | None  # engine, weights amortised
    lecture_crossover_large_batch: float  # N_active/(R·bytes_tok) with this chip's R
    crossover_at_batch: float | None  # engine, at this batch
    goldilocks_lo: float | None
    goldilocks_hi: float | None
    attention_10pct_context: float | None  # attention FLOPs = 10 % of matmul FLOPs
    attention_equal_context: float | None  # = 100 %
    sparse_crossover_large_batch: float | None  # with sparse attention (c·len^p positions read)
    max_context_fit: int

    def as_dict(self) -> dict:
        return asdict(self)


def summarize_context(sv: Serving, batch: float, band: float = 2.0, sparse_const: float = 64.0,
                      sparse_exponent: float = 0.5) -> ContextSummary:
    from tokenomy.arch.params import count_params, kv_bytes_per_token, weight_bytes
    from tokenomy.econ.batch import lecture_ratio

    p = count_params(sv.model)
    bpw = weight_bytes(sv.model, sv.weight_dtype) / p.total
    R = float(lecture_ratio(sv.peaks.flops_per_s, bpw, sv.peaks.hbm_bytes_per_s))
    kvb = kv_bytes_per_token(sv.model, sv.kv_dtype)
    C = np.geomspace(1.0, CONTEXT_SEARCH_MAX, 2000)  # fine grid: the zone's edges to ~1 %
    t = sv.roofline().terms(batch, C)  # the balance quantities are roofline ones, as engine_crossover
    lo, hi = goldilocks(C, np.where(t.fits, t.compute_s, np.nan), t.memory_s, band)
    return ContextSummary(
        model=sv.model.name, hardware=sv.hardware.name, chips=sv.chips, batch=int(batch), kv_bytes_per_token=kvb,
        crossover_large_batch=engine_crossover(sv), lecture_crossover_large_batch=float(
            crossover_context(p.matmul_active * bpw, R, kvb)),
        crossover_at_batch=engine_crossover(sv, batch), goldilocks_lo=lo, goldilocks_hi=hi,
        attention_10pct_context=attention_share_context(sv, 0.1), attention_equal_context=attention_share_context(sv),
        sparse_crossover_large_batch=engine_crossover(sv, None, sparse_const, sparse_exponent),
        max_context_fit=max_context_fit(sv, batch))


INVERSE_MODELS = ("deepseek-v3", "kimi-k2", "llama-3.1-70b", "llama-3.1-405b", "qwen3-235b-a22b", "gemma-3-27b",
                  "gpt-oss-120b")


def inverse_rows(sv: Serving, step_context: float, models=INVERSE_MODELS) -> list[dict]:
    """The inverse problem on ``sv``'s chip: the KV bytes/token a price step at ``step_context`` implies for each
    architecture's own N_active (engine units: 2·N·HBM_bw/(peak·len)), against its real KV bytes/token at that
    context (sliding windows amortised; GQA, MLA and shared global layers as the configs say)."""
    from tokenomy.arch.params import count_params, kv_bytes_at_context
    from tokenomy.catalog import loader

    rows, seen = [], set()
    for m in [sv.model, *(loader.model(n) for n in models)]:
        if m.name in seen:
            continue
        seen.add(m.name)
        _, peak = sv.with_(model=m).compute
        n_act = count_params(m).matmul_active
        implied = 2.0 * n_act * sv.hardware.hbm_bytes_per_s / (peak * step_context)
        real = kv_bytes_at_context(m, step_context, sv.kv_dtype) / step_context
        rows.append({"architecture": m.name, "attention": "+".join(sorted({x.attention.kind for x in m.layers})),
                     "active_params": n_act, "kv_bytes_per_token": real, "implied_kv_bytes_per_token": implied,
                     "ratio": real / implied, "crossover_context": step_context * implied / real})
    return rows
