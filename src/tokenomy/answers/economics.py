"""The serving-economics answers: batch, latency, context, pricing, speculate, cache, lecture.

Each takes the keywords of its CLI command (dashes -> underscores, values parsed: ints, floats, lists; model and
hardware as names or objects) and returns a Result whose payload() is what ``tokenomy <command> --json`` prints.
Every pass is the one engine (core/engine.py) on a deployment built here:
    efficiency   "calibrated" (default: the chip's fitted terms) or "roofline" (ideal values)
    layout       the degrees given (tp, ep, pp, dp, redundant_experts), else layout_search.best_layout over the
                 hardware's chips (or ``chips``) at the points the command asks about; ``layout="ideal"`` is the
                 even split of every byte with no communication, a bound no layout reaches
The rule that chose the layout is in the title and in the JSON ``plan`` / ``layout_rule`` fields; each step has the
roofline bound on the same layout beside it (``roofline_step_s``). Bad input raises a one-line ValueError naming
the field.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Mapping

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.deployment_request import DeploymentRequest
from tokenomy.answers.door import door
from tokenomy.answers.passes import choose_layout
from tokenomy.answers.resolve import deployment, hardware_of, model_of
from tokenomy.answers.result import Result
from tokenomy.answers.variants import reports_hardware
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.engine import BOUNDS
from tokenomy.core.explain import explain_pass
from tokenomy.core.layout import Layout
from tokenomy.econ import batch as eb
from tokenomy.econ import context as ec
from tokenomy.econ import kv_tiers as kt
from tokenomy.econ import latency as el
from tokenomy.econ import pricing as ep
from tokenomy.econ import speculative as es
from tokenomy.econ.cost import Serving

BATCHES = tuple(2 ** i for i in range(15))  # the CLI's 1..16384
CONTEXTS = tuple(2 ** i for i in range(10, 21))  # 1024..1048576
HOLDS = (0.01, 1, 10, 60, 300, 3600, 86400)
BATCH_COLUMNS = ("batch", "step_s", "roofline_step_s", "matmul_s", "weights_s", "kv_s", "comms_s", "bound",
                 "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok", "mfu", "memory_per_chip_bytes",
                 "fits")


# the deployment keywords every economics answer takes beside model, hardware and chips, with their defaults
ECONOMICS_KEYWORDS = {"tp": None, "ep": None, "pp": None, "dp": None, "redundant_experts": None, "layout": None,
                      "weight_dtype": None, "kv_dtype": "bf16", "efficiency": "calibrated", "usd_per_chip_hour": None}


def deployment_request(model, hardware, chips, kw: Mapping) -> DeploymentRequest:
    """What an economics answer deploys, from its door's keywords (ECONOMICS_KEYWORDS; absent ones their default)."""
    unknown = sorted(set(kw) - set(ECONOMICS_KEYWORDS))
    if unknown:
        raise TypeError(f"unexpected keyword {unknown[0]!r}; allowed: chips, {', '.join(ECONOMICS_KEYWORDS)}")
    return DeploymentRequest.of(model, hardware, {**ECONOMICS_KEYWORDS, **kw, "chips": chips})


def serving(d: DeploymentRequest, batch, context, len_pass=1) -> Serving:
    """The deployment an economics answer runs on: its layout chosen at the (batch, context, len_pass) points."""
    inputs.optional("usd_per_chip_hour", d.usd_per_chip_hour)
    m, hw = model_of(d.model), hardware_of(d.hardware)
    dep = deployment(m, hw, layout=Layout(), weight_dtype=d.weight_dtype, kv_dtype=d.kv_dtype, efficiency=d.efficiency,
                     usd_per_chip_hour=d.usd_per_chip_hour)
    B, C, S = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(np.asarray(batch, float)[:, None],
                                                                       np.asarray(context, float)[None, :], len_pass))
    lay, rule = choose_layout(dep, d.chips, d.layout, B, C, S)
    return Serving(**{f.name: getattr(dep, f.name) for f in fields(Deployment)} | {"layout": lay},
                   layout_rule=rule)


def _context(sv: Serving) -> dict:
    return {"plan": sv.layout.as_dict(), "layout_rule": sv.layout_rule, "efficiency": sv.eff.name}


def _pass_lines(sv: Serving, batch, context, len_pass=1) -> list[str]:
    """The engine derivation of one point, the roofline bound beside it."""
    return explain_pass(sv, sv.run(batch, context, len_pass), sv.run(batch, context, len_pass, eff=ROOFLINE), 0)


def _g(v) -> str:
    return "-" if v is None else f"{v:.4g}"


@door(ECONOMICS_KEYWORDS)
@reports_hardware
def batch(*, model=None, hardware=None, chips=None, batch=BATCHES, context=8192, **kw) -> Result:
    """Decode cost and speed vs batch: balance batches, unbatched penalty, operating point, fit."""
    B, C = inputs.numbers("batch", batch), inputs.optional("context", context)
    sv = serving(deployment_request(model, hardware, chips, kw), B, [C])
    rows = eb.batch_rows(sv.terms(np.array(B, float), C))
    s = eb.summarize_batch(sv, C).as_dict()
    notes = () if s["max_batch_fit"] else (f"nothing fits: {rows[0]['why']} ({sv.label()}, context {C})",)
    op = s["operating_batch"] or 1
    derivation = (
        f"[bold]{sv.header()}[/bold]",
        f"  R = (peak/2)*bytes_per_weight/HBM_bw = {s['lecture_ratio']:.1f}; sparsity = N_total/N_active = "
        f"{s['sparsity']:.2f}",
        f"  lecture balance batch B* = R*sparsity = {s['lecture_balance_batch']:.0f} (every expert read each step)",
        f"  engine balance (weight matmul time = weight fetch time on this layout, busiest EP rank): "
        f"{_g(s['balance_batch'])}; with KV and attention: {_g(s['balance_batch_with_kv'])}",
        f"  operating batch = min(2*B*, max fit {s['max_batch_fit']}) = {_g(s['operating_batch'])}"
        f"{' (memory binds)' if s['memory_binds'] else ''}",
        f"  $/Mtok = n*$/chip-s*step/B*1e6; floor (B->inf) = {s['cost_floor_usd_per_mtok']:.4g}; "
        f"B=1: {_g(s['cost_batch1_usd_per_mtok'])} -> unbatched penalty {_g(s['unbatched_penalty'])}",
        f"  the operating batch {op} through the engine:", *_pass_lines(sv, op, C))
    return Result("batch", f"batch economics: {sv.header()}, context {C}, ${sv.price}/chip-h", tuple(rows),
                  BATCH_COLUMNS, {"summary": s, **_context(sv)}, notes, derivation)


@door(ECONOMICS_KEYWORDS)
@reports_hardware
def latency(*, model=None, hardware=None, chips=None, batch=BATCHES, context=8192, tick_s=None,
            global_tokens_per_s=el.GLOBAL_TOKENS_PER_S, **kw) -> Result:
    """Train-departure schedule: HBM drain time per chip; with a model, the schedule and the Pareto flag."""
    from tokenomy.catalog import loader

    hw = None if not hardware else hardware_of(hardware)
    drain = tuple(el.drain_rows([hw.chip] if hw else [loader.hardware(n).chip for n in loader.chip_names()]))
    if not model:
        return Result("latency", "HBM drain time per chip", drain,
                      ("chip", "hbm_bytes", "hbm_bytes_per_s", "drain_s", "preliminary"), rows_key="",
                      derivation=("drain_s = HBM capacity / HBM bandwidth: the step time that reads all of HBM once",))
    B, C = inputs.numbers("batch", batch), inputs.optional("context", context)
    tick = None if tick_s is None else inputs.number("tick_s", tick_s)
    g = inputs.number("global_tokens_per_s", global_tokens_per_s)
    sv = serving(deployment_request(model, hw, chips, kw), B, [C])
    rows = el.schedule_rows(sv.terms(np.array(B, float), C), sv.chips, tick, g)
    derivation = (f"[bold]{sv.header()}[/bold]",
                  "  worst-case latency = tick (wait for the next departure) + step (run; TPOT on a pipeline)",
                  f"  unit tokens/s = B/step; fraction = unit / global ({g:.3g} tok/s); per user = 1/step; "
                  f"per chip = B/(step*{sv.chips})")
    return Result("latency", f"departure schedule: {sv.header()}, context {C}", tuple(rows),
                  ("batch", "step_s", "worst_case_latency_s", "unit_tokens_per_s", "fraction_of_global",
                   "tokens_per_s_per_user", "tokens_per_s_per_chip", "bound", "pareto", "fits"),
                  {"drain": list(drain), **_context(sv)}, derivation=derivation, rows_key="schedule")


# context's own knobs with their defaults: the Goldilocks band, the sparse-attention reads min(len, c·len^e), the
# price step's context
CONTEXT_KEYWORDS = {"sparse_const": 64.0, "sparse_exponent": 0.5, "band": 2.0, "step_context": 200000}


def _own(kw: dict, table: dict) -> dict:
    """The keywords of ``table`` taken out of ``kw`` (absent ones their default), each a number by the grammar."""
    return {k: inputs.number(k, kw.pop(k, d)) for k, d in table.items()}


@door({**CONTEXT_KEYWORDS, **ECONOMICS_KEYWORDS})
@reports_hardware
def context(*, model=None, hardware=None, chips=None, batch=256, context=CONTEXTS, **kw) -> Result:
    """Context length: compute/memory crossover, MFU vs context, Goldilocks zone, price-step inverse."""
    B, Cs = inputs.optional("batch", batch), inputs.numbers("context", context)
    knobs = _own(kw, CONTEXT_KEYWORDS)
    sc, sp, bd, sc_ctx = (knobs[k] for k in ("sparse_const", "sparse_exponent", "band", "step_context"))
    sv = serving(deployment_request(model, hardware, chips, kw), [B], Cs)
    rows = ec.context_rows(sv, B, Cs)
    s = ec.summarize_context(sv, B, bd, sc, sp).as_dict()
    inverse = ec.inverse_rows(sv, sc_ctx)
    derivation = (f"[bold]{sv.header()}, batch {B}[/bold]",
                  "  crossover (large B): per-sequence KV time = compute time; lecture form len* = N_active/(R*bytes_tok)",
                  "  at batch B: B*compute = weights + B*KV(len); MFU = compute / max(compute, memory)",
                  f"  Goldilocks: compute and memory within x{bd:g} of each other; sparse: reads min(len, {sc:g}*len^{sp:g})",
                  "  inverse: bytes_tok = 2*N_active*HBM_bw/(peak*len_step) (= N_active/(R*len*))",
                  f"  batch {B} at context {Cs[0]} through the engine:", *_pass_lines(sv, B, Cs[0]))
    return Result("context", f"context: {sv.header()}, batch {B}", tuple(rows),
                  ("context", "step_s", "roofline_step_s", "compute_s", "attention_s", "weights_s", "kv_s", "bound",
                   "mfu", "usd_per_mtok", "fits"), {"summary": s, "inverse": inverse, **_context(sv)},
                  derivation=derivation)


@door(ECONOMICS_KEYWORDS)
@reports_hardware
def pricing(*, model=None, hardware=None, chips=None, batch=BATCHES, context=8192, prompt_tokens=4096,
            prefill_batch=1, **kw) -> Result:
    """Input (prefill) vs output (decode) token cost and the output/input ratio vs published prices.
    Decode runs on the best layout for the decode batches, the prefill on the best layout for its own pass."""
    from tokenomy.catalog import loader

    B, C = inputs.numbers("batch", batch), inputs.optional("context", context)
    P, pb = inputs.optional("prompt_tokens", prompt_tokens), inputs.optional("prefill_batch", prefill_batch)
    if P > C:
        raise ValueError(f"prompt_tokens: must be <= context ({C}), got {P}")
    d = deployment_request(model, hardware, chips, kw)
    sv = serving(d, B, [C])
    pre = serving(replace(d, model=sv.model, hardware=sv.hardware), [pb], [P], len_pass=P)
    rows = [ep.price_ratio(sv, b, C, P, pb, prefill=pre).as_dict() for b in B]
    sheets = ep.price_sheet_rows(loader.price_file(n) for n in loader.price_names())
    derivation = (f"[bold]{sv.header()}[/bold]",
                  f"  input: prefill of {P} tokens x batch {pb} on {pre.layout.label()}: $/Mtok = n*$/chip-s*step/"
                  "(B*len_pass)*1e6",
                  f"  output: decode at context {C}: $/Mtok = n*$/chip-s*step/B*1e6",
                  "  output/input = MFU_prefill/MFU_decode (= decode t_mem/t_compute when prefill is at the roofline)")
    return Result("pricing", f"input vs output token cost: {sv.header()}, ${sv.price}/chip-h", tuple(rows),
                  ("decode_batch", "usd_per_mtok_input", "usd_per_mtok_output", "output_over_input", "prefill_mfu",
                   "decode_mfu", "decode_bound", "within_provider_range"),
                  {"price_sheets": sheets, **_context(sv), "prefill_plan": pre.layout.as_dict()},
                  derivation=derivation)


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
        eb.summarize_batch(sv, C).operating_batch
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


def published_cache_rows() -> list[dict]:
    """Published prompt-caching prices over each sheet's base input price."""
    from tokenomy.catalog import loader

    rows = []
    for n in loader.price_names():
        p = loader.price_file(n)
        f = lambda v: None if v is None else v / p.input_usd_per_mtok  # noqa: E731
        rows.append({"price_sheet": n, "write_5m_over_base": f(p.cache_write_5m_usd_per_mtok),
                     "write_1h_over_base": f(p.cache_write_1h_usd_per_mtok), "read_over_base": f(p.cache_read_usd_per_mtok)})
    return rows


@door(ECONOMICS_KEYWORDS)
@reports_hardware
def cache(*, model=None, hardware=None, chips=None, prefix_tokens=32768, hold=HOLDS, stall=0.0, prefill_batch=1,
          **kw) -> Result:
    """KV cache tiers: where a cached prefix should live, vs rematerialising it, and implied cache prices.
    The rematerialising prefill runs on the best layout for that prefill."""
    from tokenomy.arch.params import kv_bytes_at_context

    P, pb = inputs.optional("prefix_tokens", prefix_tokens), inputs.optional("prefill_batch", prefill_batch)
    holds = [inputs.number("hold", h) for h in (hold if isinstance(hold, (list, tuple)) else [hold])]
    if not holds:
        raise ValueError("hold: needs hold times in seconds, e.g. 300,3600")
    st = inputs.number("stall", stall)
    sv = serving(deployment_request(model, hardware, chips, kw), [pb], [P], len_pass=P)
    size = kv_bytes_at_context(sv.model, P, sv.kv_dtype)
    remat = kt.remat_usd(sv, P, pb)
    tiers = [kt.hbm_tier(sv.hardware.chip, sv.price)] + [t for t in kt.tiers_from_catalog(chip=sv.hardware.chip.name)
                                                         if t.tier != "hbm"]
    gpu = sv.chips * sv.price / 3600.0
    names, costs = kt.cheapest(size, holds, tiers, remat, gpu, st)
    rule = kt.drain_rule_choice(holds, [t.drain_s for t in tiers], [t.name for t in tiers])
    hold_rows = []
    for h, nm, c, r in zip(holds, names, costs, rule):
        dsc = kt.implied_discounts(size, h, tiers, remat, gpu, st)
        hold_rows.append({"hold_s": h, "cheapest": nm, "cheapest_usd": float(c), "drain_rule_tier": r,
                          "remat_usd": remat, "cheapest_caching_tier": dsc.tier, "hit_over_base": dsc.hit_fraction,
                          "write_premium_over_base": dsc.write_premium_fraction})
    extra = {"prefix_tokens": P, "prefix_bytes": size, "remat_usd": remat,
             "tiers": kt.tier_rows(size, holds[0], tiers, remat, gpu, st),
             "envelope": kt.envelope(size, tiers, remat, gpu, st), "published": published_cache_rows(),
             **_context(sv)}
    derivation = (f"[bold]{sv.header()}: {P}-token prefix = {size / 1e9:.3g} GB[/bold]",
                  "  hold(T) = bytes/capacity * tier $/s * T; retrieve = bytes/bandwidth * (tier $/s + stall*GPU $/s)",
                  f"  rematerialise = prefill cost = ${remat:.4g}; drain rule: the tier whose cap/bw is nearest T",
                  "  the rematerialising prefill through the engine:", *_pass_lines(sv, pb, P, P))
    return Result("cache", f"cached prefix: {sv.header()}", tuple(hold_rows),
                  ("hold_s", "cheapest", "cheapest_usd", "drain_rule_tier", "remat_usd", "hit_over_base",
                   "write_premium_over_base"), extra, derivation=derivation, rows_key="holds")


def lecture_serving(model, hardware, *, kv_dtype, batch, context, len_pass=1) -> Serving:
    """What lecture/real.py asks on: the calibrated set on the best layout over the system's chips."""
    return serving(deployment_request(model, hardware, None, {"kv_dtype": kv_dtype}), batch, context, len_pass)


@door()
def lecture(*, real=False, ids=None) -> Result:
    """Lecture claims L1-L28 from their stated inputs (``real``: the claims re-asked on today's hardware instead,
    calibrated on real layouts)."""
    from tokenomy.lecture_claims import CLAIMS, evaluate, seed_corrections
    from tokenomy.lecture_claims.real import closing_note, real_rows

    want = None if ids is None else [str(x).strip() for x in ids if str(x).strip()]
    known = {c.id for c in CLAIMS}
    if want is not None and (not want or {x.upper() for x in want} - known):
        raise ValueError(f"ids: allowed {', '.join(c.id for c in CLAIMS)}; got {','.join(map(str, ids))}")
    if real:
        rr = real_rows(lecture_serving)
        return Result("lecture", "the lecture on today's hardware (calibrated, real layouts)",
                      tuple(r.as_dict() for r in rr),
                      ("id", "quantity", "setting", "lecture_value", "real_value", "ratio", "agrees"), rows_key="",
                      derivation=tuple(closing_note(rr)))
    claims = tuple(r.as_dict() for r in evaluate(want))
    derivation = tuple(f"{c['id']}: {c['formula']}; inputs {c['inputs']}" + (f"\n    {c['note']}" if c["note"] else "")
                       for c in claims)
    return Result("lecture", "lecture.md §4.1: claims regenerated from their stated inputs", claims,
                  ("id", "claim", "lecture_value", "computed_value", "tolerance", "ok"),
                  {"seed_corrections": seed_corrections()}, derivation=derivation, rows_key="")
