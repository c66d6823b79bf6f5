"""The speculate answer: speculative decoding / multi-token prediction (a draft model, or the model's own MTP
modules through the engine) and "fast mode" (the price multiplier of a speed-up), on the economics deployment."""

from __future__ import annotations

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.econ_serving import BATCHES, ECONOMICS_KEYWORDS, _context, _pass_lines, deployment_request, serving
from tokenomy.answers.resolve import model_of
from tokenomy.answers.result import Result
from tokenomy.answers.variants import reports_hardware
from tokenomy.core.engine import BOUNDS
from tokenomy.econ import batch as eb
from tokenomy.econ import speculative as es

# speculate's own knobs (None: by the draft kind, below; base_batch: the operating batch)
SPECULATE_KEYWORDS = {"draft_tokens": None, "acceptance": None, "draft_cost": None, "base_batch": None}


@door({**SPECULATE_KEYWORDS, **ECONOMICS_KEYWORDS})
@reports_hardware
def speculate(*, model=None, hardware=None, chips=None, batch=BATCHES, context=8192, draft="model", target_speed=2.5,
              **kw) -> Result:
    """Speculative decoding / multi-token prediction and "fast mode" (price multiplier of a speed-up).

    draft="model": a draft model priced at ``draft_cost`` x the plain step (k = ``draft_tokens`` = 3, alpha =
    ``acceptance`` = 0.7 by default). draft="mtp": the model's own MTP module(s) through the engine (k = the model's
    module count, alpha = 0.85 by default: DeepSeek-V3 report §5.4.3), their weights and KV added to the memory per
    chip. ``base_batch``: plain decode's batch that fast mode speeds up (default: the operating batch)."""
    draft_tokens, acceptance, draft_cost, base_batch = (kw.pop(k, None) for k in SPECULATE_KEYWORDS)
    if draft not in es.DRAFT_KINDS:
        raise ValueError(f"draft: allowed {', '.join(es.DRAFT_KINDS)}; got {draft!r}")
    B, C = inputs.numbers("batch", batch), inputs.optional("context", context)
    m = model_of(model)
    mtp = draft == "mtp"
    if mtp:
        es.mtp_module(m)  # a model without an MTP module: the one-line error naming draft and the model
        if draft_cost is not None:
            raise ValueError("draft_cost: the MTP draft's cost is its own layers through the engine; leave it out "
                             "with draft='mtp'")
    k = inputs.optional("draft_tokens", draft_tokens if draft_tokens is not None else (m.mtp_layers if mtp else 3))
    a = inputs.number("acceptance", acceptance if acceptance is not None else (es.MTP_ACCEPTANCE if mtp else 0.7))
    d = 0.0 if mtp else inputs.number("draft_cost", 0.05 if draft_cost is None else draft_cost)
    es.check_speculation(k, a, d)
    if k + 1 > C:
        raise ValueError(f"draft_tokens: k+1 must be <= context ({C})")
    ts = inputs.number("target_speed", target_speed)
    sv = serving(deployment_request(m, hardware, chips, kw), B, [C])
    dr = es.mtp_draft(sv) if mtp else None
    base = inputs.optional("base_batch", base_batch) if base_batch is not None else \
        eb.operating_batch(sv, C)
    if not base:
        raise ValueError(f"base_batch: nothing fits on {sv.label()} at context {C}")
    sp = es.speculate(sv, np.array(B, float), C, k, a, d, dr)
    fast = es.fast_mode_rows(sv, base, np.array(B, float), C, k, a, d, dr)
    rows = []
    for i, f in enumerate(fast):
        ok = f["fits"]
        v = lambda x: float(np.ravel(x)[i]) if ok else None  # noqa: E731
        bound = lambda x: BOUNDS[int(np.ravel(x)[i])] if ok and x is not None else None  # noqa: E731
        rows.append({"batch": f["batch"], "base_bound": bound(sp.base_bound), "verify_bound": bound(sp.verify_bound),
                     "draft_bound": bound(sp.draft_bound), "binds": (None if not ok else "verify" if
                                                                    v(sp.verify_step_s) >= v(sp.draft_s) else "draft"),
                     "tokens_per_step": sp.tokens_per_step, "base_step_s": v(sp.base_step_s),
                     "verify_step_s": v(sp.verify_step_s), "draft_step_s": v(sp.draft_step_s), "draft_s": v(sp.draft_s),
                     "draft_over_verify": v(sp.draft_s / sp.verify_step_s), "round_s": v(sp.round_s),
                     "speedup": v(sp.speedup), "cost_ratio": v(sp.cost_ratio),
                     "memory_per_chip_bytes": float(np.ravel(sp.memory_per_chip_bytes)[i]),
                     "draft_bytes_per_chip": float(np.ravel(sp.draft_bytes_per_chip)[i]),
                     **{key: f[key] for key in ("speed_multiplier", "price_multiplier", "speed_multiplier_batch_only",
                                                "price_multiplier_batch_only", "fits")}})
    plain = es.fast_mode_point(sv, base, C, ts)
    spec = es.fast_mode_point(sv, base, C, ts, k, a, d, draft=dr)
    both = es.fast_mode_point(sv, base, C, ts, k, a, d, speculative_base=True, draft=dr)
    d0 = float(np.ravel(sp.draft_step_s)[0] / np.ravel(sp.base_step_s)[0]) if mtp else d
    summary = {"draft": draft, "draft_tokens": k, "acceptance": a, "draft_cost": d0,
               "expected_tokens_per_step": sp.tokens_per_step,
               "speedup_memory_bound_closed_form": float(es.speedup_memory_bound(a, k, d0)),
               "speedup_compute_bound_closed_form": float(es.speedup_compute_bound(a, k, d0)),
               "base_batch": base, "target_speed": ts,
               "fast_mode_batch_only": plain[0], "fast_mode_batch_only_price_multiplier": plain[1],
               "fast_mode_speculative_batch": spec[0], "fast_mode_speculative_price_multiplier": spec[1],
               "fast_mode_both_speculative_batch": both[0], "fast_mode_both_speculative_price_multiplier": both[1],
               "max_speed_multiplier_batch_only": max((f["speed_multiplier_batch_only"] or 0) for f in fast),
               "published_fast_mode": f"{es.FAST_MODE_PRICE:g}x price for {es.FAST_MODE_SPEED:g}x speed"}
    if mtp:
        blk = dr.model.layers[0]
        summary |= {"mtp_modules": m.mtp_layers, "mtp_modules_resident": min(k, m.mtp_layers),
                    "mtp_params_per_module": es.mtp_params(m),
                    "mtp_block": f"{blk.attention.describe()} + {blk.mlp.kind}",
                    "acceptance_source": es.MTP_ACCEPTANCE_SOURCE if acceptance is None else "given",
                    "draft_layout": dr.layout.label()}
    head = (f"[bold]{sv.header()}: k = {k}, alpha = {a}, " +
            (f"draft = the model's MTP module ({m.mtp_layers} in the model, {min(k, m.mtp_layers)} resident)"
             if mtp else f"draft cost d = {d}") + "[/bold]")
    draft_lines = (("  draft: k one-token passes of one MTP module (arXiv 2412.19437 §2.2): "
                    f"{summary['mtp_block']} block + 2 RMSNorms + 2D x D projection + final norm = "
                    f"{summary['mtp_params_per_module'] / 1e9:.4g} B params, embedding and head shared",
                    f"  resident per chip: {min(k, m.mtp_layers)} module(s) weights + KV = "
                    f"{float(np.ravel(sp.draft_bytes_per_chip)[0]) / 1e9:.4g} GB at batch {B[0]}",
                    f"  acceptance: {summary['acceptance_source']}",
                    f"  one MTP pass at batch {B[0]} through the engine ({dr.label()}):",
                    *_pass_lines(dr, B[0], C, 1)) if mtp else
                   ("  round = verify pass of k+1 tokens (engine, len_pass = k+1) + k*d*plain step",))
    derivation = (head,
                  "  closed forms: memory-bound E/(1+k*d); compute-bound E/(k+1+k*d)",
                  f"  E[tokens/step] = (1-a^(k+1))/(1-a) = {sp.tokens_per_step:.3f} (Leviathan et al. 2023, eq. 1)",
                  *(("  round = verify pass of k+1 tokens (engine, len_pass = k+1) + k MTP passes (engine, inside the "
                     "verify step: its host time o_step + o_seq*b once a round, each draft layer its kernels' floor kappa)",)
                    if mtp else ()), *draft_lines,
                  "  speed-up = E*step/round; cost ratio = 1/speed-up (same batch and chips)",
                  f"  fast mode: the largest batch with {ts:g}x the tokens/s per user of plain decode at batch {base}, "
                  "and its $/token multiplier (batch only; with speculation; both modes speculating)",
                  f"  the verify pass at batch {B[0]} through the engine:", *_pass_lines(sv, B[0], C, k + 1))
    cols = (("batch", "base_bound", "verify_bound", "draft_bound", "base_step_s", "verify_step_s", "draft_s",
             "draft_over_verify", "round_s", "speedup", "cost_ratio", "memory_per_chip_bytes", "fits") if mtp else
            ("batch", "base_bound", "base_step_s", "round_s", "speedup", "cost_ratio", "speed_multiplier",
             "price_multiplier", "fits"))
    title = f"speculative decoding{' (MTP draft)' if mtp else ''}: {sv.header()}, context {C}"
    return Result("speculate", title, tuple(rows), cols, {"summary": summary, **_context(sv)}, derivation=derivation)

