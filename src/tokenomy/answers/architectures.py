"""The lecture's context questions (§2.5, claims L8-L10) re-asked for each architecture, side by side.

Per model, on one hardware, all through the one engine on the model's best layout (layout_search.best_layout over
the chips at batch 1 and MAX_OPERATING_BATCH x contexts 1k..1M, so the same layout answers every question):
    bytes per sequence   engine.cache_terms(...).cached_per_seq at 1k..1M: KV entries each kind keeps (window, chunk,
                         compression, index keys) + the fixed linear/SSM state (written_per_seq)
    crossover            econ.context.engine_crossover: per-sequence memory time = compute time at large batch, at
                         the roofline; "none (memory-bound)" when memory already exceeds compute at a 1-token
                         context (a linear state read each step), "none" when it never catches up below 1e9 tokens
    balance batch        econ.batch.engine_balance_batch at 8k with KV (compute = all memory traffic); where decode
                         never turns compute-bound at 8k, the weight balance (weight matmul = weight fetch) instead
    max context          econ.context.max_context_fit: memory per chip <= usable HBM at batch 1 and at the balance batch
    MFU / $ per Mtok     calibrated, at the operating batch min(largest batch that fits at that context, max_batch)
    verdict              the claim "context stalls at 100-200k because KV bytes x context outgrow HBM capacity and
                         bandwidth": holds where the bytes per token at 1M are within 2x of a dense GQA model's
                         (REFERENCE) and the crossover is below 200k; otherwise by how much and which kind.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.economics import deployment_request, serving
from tokenomy.answers.resolve import model_of
from tokenomy.answers.result import Result
from tokenomy.answers.variants import reports_hardware
from tokenomy.core import engine
from tokenomy.econ import batch as eb
from tokenomy.econ import context as ec

CONTEXTS = (1024, 8192, 32768, 131072, 262144, 1048576)  # the table's KV columns
CONTEXT_NAMES = ("1k", "8k", "32k", "128k", "256k", "1m")
CURVE = tuple(2 ** i for i in range(10, 21))  # MFU vs context: 1k..1M
PRICED = {"8k": 8192, "128k": 131072, "1m": 1048576}
BALANCE_CONTEXT = 8192
CLAIM_CONTEXT = 200_000  # the lecture's "100-200k": its upper end
REFERENCE = "llama-3.1-405b"  # the dense GQA model the bytes per token are compared with
MAX_OPERATING_BATCH = 256
LAYOUT_BATCHES = (1, MAX_OPERATING_BATCH)
LAYOUT_CONTEXTS = (1024, 8192, 131072, 1048576)
COLUMNS = ("model", *(f"kv_{n}_bytes" for n in CONTEXT_NAMES), "state_bytes", "vs_dense_gqa", "crossover",
           "balance_batch", "max_context_batch1", "max_context_balance", "usd_per_mtok_8k", "usd_per_mtok_128k",
           "usd_per_mtok_1m", "claim")


def bytes_per_sequence(sv, contexts) -> tuple[np.ndarray, float]:
    """(cached bytes of one sequence at each context, the fixed state part) from the engine's cache terms."""
    C = np.asarray(contexts, float)
    ct = engine.cache_terms(sv.shape.coeffs, C, np.ones_like(C), sv.precision)
    return np.broadcast_to(np.asarray(ct.cached_per_seq, float), C.shape), float(np.ravel(ct.written_per_seq)[0])


def _kinds(m) -> str:
    """Why the bytes differ: the layers of each kind (compressed KV, top-k, linear state, window, chunk)."""
    n, out = len(m.layers), {}
    for layer in m.layers:
        a = layer.attention
        parts = ([f"linear {a.variant or 'state'} (fixed state)"] if a.kind == "linear" else
                 [a.kind] + ([f"window {a.window}"] if a.window else []) + ([f"chunk {a.chunk}"] if a.chunk else [])
                 + ([f"compressed 1/{a.compress_ratio}"] if a.compress_ratio else [])
                 + ([f"top-{a.index_topk}"] if a.index_topk else []))
        key = " ".join(parts)
        out[key] = out.get(key, 0) + 1
    return ", ".join(f"{k}/{n} {key}" for key, k in sorted(out.items(), key=lambda kv: -kv[1]))


def _crossover(sv) -> tuple[float | None, str]:
    x = ec.engine_crossover(sv)
    if x is not None:
        return float(x), f"{x:,.0f}"
    t = sv.roofline().terms(1.0, 1.0)  # which side of the balance a 1-token context is on (engine_crossover's test)
    memory_bound = float(np.ravel(t.kv_s + t.other_s)[0]) >= float(np.ravel(t.compute_s)[0])
    return None, "none (memory-bound at every context)" if memory_bound else "none (compute-bound below 1e9)"


def _balance(sv) -> tuple[int | None, str]:
    b = eb.engine_balance_batch(sv, BALANCE_CONTEXT, with_kv=True)
    if b is not None:
        return int(np.ceil(b)), "compute = weights + KV traffic at 8k"
    b = eb.engine_balance_batch(sv, BALANCE_CONTEXT, with_kv=False)
    return (None if b is None else int(np.ceil(b))), "weight matmul = weight fetch (never compute-bound at 8k with KV)"


def _curve(sv, contexts, max_batch: int) -> list[dict]:
    """MFU and $/Mtok vs context at the operating batch of each context (calibrated)."""
    fits = eb.max_batch_fits(sv, contexts)
    Bs = [min(fit, max_batch) for fit in fits]
    t = sv.terms(np.array([float(max(B, 1)) for B in Bs]), np.array(contexts, float))  # one pass over the points
    out = []
    for i, (C, fit, B) in enumerate(zip(contexts, fits, Bs)):
        ok = B > 0 and bool(np.ravel(t.fits)[i])
        g = (lambda x: float(np.ravel(x)[i]) if ok else None)  # noqa: E731
        out.append({"context": int(C), "batch": B, "max_batch_fit": fit, "mfu": g(t.mfu),
                    "usd_per_mtok": g(t.usd_per_mtok), "step_s": g(t.step_s),
                    "bound": t.bound_name(i) if ok else None})
    return out


def _runs(sv, batch: int) -> bool:
    """The layout can run ``batch`` sequences at all (no batch-shape reason: dp or pipeline stages > sequences)."""
    r = int(np.ravel(sv.engine_pass(float(batch), 1.0).reason)[0])
    return not engine.FIRST_POINT_REASON <= r < engine.FITS_REASON


def _max_context(sv, batch: int) -> tuple[int, int]:
    """(largest context, chips used): econ.context.max_context_fit on the best layout for ``batch`` itself. A rack
    whose every layout over all its chips has more replicas or stages than ``batch`` sequences (a dense model at
    batch 1 on 72 chips: tp8 x dp9 or pp9) serves it on fewer chips: the largest divisor of the chips that runs it."""
    n = sv.chips
    for chips in [d for d in range(n, 0, -1) if n % d == 0]:
        try:
            own = serving(deployment_request(sv.model, sv.hardware, chips, {
                "kv_dtype": sv.kv_dtype, "weight_dtype": sv.weight_dtype, "efficiency": sv.eff,
                "usd_per_chip_hour": sv.usd_per_chip_hour}), [batch], list(LAYOUT_CONTEXTS))
        except ValueError:  # no valid layout over this many chips
            continue
        if _runs(own, batch):
            return ec.max_context_fit(own, float(batch)), chips
    return 0, n


def _verdict(s: dict) -> str:
    ratio, x, m1, mb = s["vs_dense_gqa"], s["crossover"], s["max_context_batch1"], s["max_context_balance"]
    bw_binds = x is not None and x < CLAIM_CONTEXT
    if ratio >= 0.5 and bw_binds:
        head = "holds"
    elif ratio >= 0.5 or bw_binds:
        head = "partly holds"
    else:
        head = "no longer holds"
    on = "" if s["chips_batch1"] == s["chips"] else f" on {s['chips_batch1']} of the {s['chips']} chips"
    cap = (f"batch 1 fits {m1:,} tokens{on} ({m1 / CLAIM_CONTEXT:.3g}x 200k)" if m1 else "batch 1 does not fit")
    bal = ("" if s["balance_batch"] is None else
           f", batch {s['balance_batch']:,} fits {mb:,}" if mb else f", batch {s['balance_batch']:,} fits nothing")
    bw = (f"crossover {x:,.0f} ({x / CLAIM_CONTEXT:.2g}x 200k)" if x is not None else f"crossover {s['crossover_text']}")
    return head, (f"bytes/token at 1M {ratio:.3g}x {REFERENCE}'s; {cap}{bal}; {bw}; kinds: {s['attention']}")


def _one(model, hardware, chips, kv_dtype, max_batch, ref_per_token, **kw) -> tuple[dict, list[dict], dict]:
    sv = serving(deployment_request(model, hardware, chips, {**kw, "kv_dtype": kv_dtype}), list(LAYOUT_BATCHES),
                 list(LAYOUT_CONTEXTS))
    kv, state = bytes_per_sequence(sv, CONTEXTS)
    x, x_text = _crossover(sv)
    bal, bal_rule = _balance(sv)
    curve = _curve(sv, sorted(set(CURVE) | set(PRICED.values())), max_batch)
    at = {r["context"]: r for r in curve}
    per_token = float(kv[-1]) / CONTEXTS[-1]
    (m1, c1), (mb, cb) = _max_context(sv, 1), ((None, None) if bal is None else _max_context(sv, bal))
    s = {"model": sv.model.name, "attention": _kinds(sv.model),
         **{f"kv_{n}_bytes": float(v) for n, v in zip(CONTEXT_NAMES, kv)}, "state_bytes": state,
         "kv_1m_bytes_per_token": per_token, "vs_dense_gqa": per_token / ref_per_token,
         "crossover": x, "crossover_text": x_text, "balance_batch": bal, "balance_rule": bal_rule,
         "max_context_batch1": m1, "chips_batch1": c1,
         "max_context_balance": mb, "chips_balance": cb,
         **{f"usd_per_mtok_{n}": at[C]["usd_per_mtok"] for n, C in PRICED.items()},
         **{f"operating_batch_{n}": at[C]["batch"] for n, C in PRICED.items()},
         "layout": sv.layout.label(), "chips": sv.chips}
    s["claim"], s["verdict"] = _verdict(s)
    return s, curve, {"plan": sv.layout.as_dict(), "layout_rule": sv.layout_rule, "header": sv.header()}


@lru_cache(maxsize=64)
def _one_cached(model, hardware, chips, kv_dtype, max_batch, ref_per_token, kw: tuple):
    return _one(model, hardware, chips, kv_dtype, max_batch, ref_per_token, **dict(kw))


def _one_of(model, hardware, chips, kv_dtype, max_batch, ref_per_token, kw: dict):
    """One model's row, curve and plan; each depends on that model alone (not on the others compared), so a
    selection that adds or drops a model recomputes only the new one (cached while the inputs are hashable)."""
    key = tuple(sorted(kw.items()))
    try:
        hash((model, hardware, chips, kv_dtype, max_batch, ref_per_token, key))
    except TypeError:
        return _one(model, hardware, chips, kv_dtype, max_batch, ref_per_token, **kw)
    s, curve, plan = _one_cached(model, hardware, chips, kv_dtype, max_batch, ref_per_token, key)
    return dict(s), [dict(p) for p in curve], dict(plan)  # copies: callers may not change the cached ones


def _models(models) -> list:
    if models is None or isinstance(models, str):
        models = [] if models is None else [m for m in models.replace(",", " ").split() if m]
    names = list(models)
    if not names:
        raise ValueError("models: give at least one model to compare (tokenomy models lists them)")
    return [model_of(m) for m in names]


@door()
@reports_hardware
def context_compare(*, models=None, hardware="gb200-nvl72", chips=None, kv_dtype="bf16",
                    max_batch=MAX_OPERATING_BATCH, **kw) -> Result:
    """The context questions per architecture: bytes per sequence, crossover, largest context, MFU and $/Mtok vs
    context, and a verdict on the lecture's 100-200k claim."""
    ms = _models(models)
    cap = inputs.number("max_batch", max_batch)
    ref = serving(deployment_request(REFERENCE, hardware, chips, {**kw, "kv_dtype": kv_dtype}), [1], [CONTEXTS[-1]])
    ref_per_token = float(bytes_per_sequence(ref, CONTEXTS[-1:])[0][0]) / CONTEXTS[-1]
    rows, curves, plans = [], {}, {}
    for m in ms:
        s, curve, plan = _one_of(m, hardware, chips, kv_dtype, cap, ref_per_token, kw)
        rows.append(s)
        curves[s["model"]], plans[s["model"]] = curve, plan
    hw = ref.hardware.name
    derivation = [f"[bold]context per architecture on {ref.chips} x {ref.hardware.chip.name} ({hw}); KV {kv_dtype}; "
                  f"{ref.eff.name} efficiency[/bold]",
                  "  bytes/seq(C) = sum_layers (kv_elems * cached(C) + index_elems * indexed(C)) * bytes_kv + state "
                  "(engine.cache_terms; cached: window, chunk, 1/r compression)",
                  f"  dense GQA reference {REFERENCE}: {ref_per_token:,.0f} B/token at 1M",
                  "  crossover: roofline memory time = compute time per sequence, weights amortised (large batch)",
                  f"  balance batch at {BALANCE_CONTEXT}: compute = all memory traffic (roofline); max context: "
                  "memory per chip <= usable HBM",
                  f"  operating batch at C = min(max batch that fits at C, {cap}); $/Mtok = n*$/chip-s*step/B*1e6"]
    for s in rows:
        derivation += [f"  {s['model']} ({s['layout']}; {plans[s['model']]['layout_rule']}):",
                       "    bytes/seq: " + ", ".join(f"{n} {s[f'kv_{n}_bytes']:.4g} B" for n in CONTEXT_NAMES)
                       + f" (state {s['state_bytes']:.4g} B)",
                       f"    per token at 1M {s['kv_1m_bytes_per_token']:,.0f} B = {s['vs_dense_gqa']:.3g} x "
                       f"{ref_per_token:,.0f}; crossover {s['crossover_text']}; balance batch {s['balance_batch']} "
                       f"({s['balance_rule']})",
                       f"    max context: batch 1 {s['max_context_batch1']:,}; balance batch "
                       f"{s['max_context_balance']}; $/Mtok 8k/128k/1M at batch "
                       f"{s['operating_batch_8k']}/{s['operating_batch_128k']}/{s['operating_batch_1m']}: "
                       + "/".join("-" if s[f"usd_per_mtok_{n}"] is None else f"{s[f'usd_per_mtok_{n}']:.4g}"
                                  for n in PRICED),
                       f"    claim {s['claim']}: {s['verdict']}"]
    extra = {"hardware": hw, "kv_dtype": kv_dtype, "contexts": list(CONTEXTS), "reference": REFERENCE,
             "reference_kv_bytes_per_token_1m": ref_per_token, "claim_context": CLAIM_CONTEXT, "max_batch": cap,
             "curves": curves, "plans": plans,
             "verdicts": [{"model": s["model"], "claim": s["claim"], "why": s["verdict"]} for s in rows]}
    return Result("context_compare", f"context per architecture: {hw}, KV {kv_dtype}, {ref.eff.name} efficiency, "
                  "best layout per model", tuple(rows), COLUMNS, extra, derivation=tuple(derivation))
