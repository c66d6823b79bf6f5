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
speculation.py (speculate) and prefix_cache.py (cache) hold their answers beside this one; econ_serving.py the
deployment they all run on. All are re-exported here.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.econ_serving import (  # noqa: F401  (re-exported: callers write economics.<name>)
    BATCHES, CONTEXTS, ECONOMICS_KEYWORDS, _context, _g, _pass_lines, deployment_request, lecture_serving, serving)
from tokenomy.answers.prefix_cache import HOLDS, cache, published_cache_rows  # noqa: F401
from tokenomy.answers.resolve import hardware_of, model_of  # noqa: F401
from tokenomy.answers.result import Result
from tokenomy.answers.speculation import SPECULATE_KEYWORDS, speculate  # noqa: F401
from tokenomy.answers.variants import reports_hardware
from tokenomy.econ import batch as eb
from tokenomy.econ import context as ec
from tokenomy.econ import latency as el
from tokenomy.econ import pricing as ep

BATCH_COLUMNS = ("batch", "step_s", "roofline_step_s", "matmul_s", "weights_s", "kv_s", "comms_s", "bound",
                 "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok", "mfu", "memory_per_chip_bytes",
                 "fits")



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
