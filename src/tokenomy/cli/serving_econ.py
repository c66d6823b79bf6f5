"""Serving-economics commands, part 2: pricing, speculate, cache, lecture (helpers in cli/serving.py)."""

from __future__ import annotations

import numpy as np
import typer
from rich.markup import escape

from tokenomy.catalog import loader
from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.options import CSV, EXPLAIN, JSON
from tokenomy.cli.render import emit, explain, to_json
from tokenomy.cli.serving import CHIPS, FF, HARDWARE, HF, KVDT, MODEL, OH, PRICE, WDT, float_list, num, serving, show

BATCH = typer.Option("1..16384", "--batch", help="Comma list or a..b powers of two.")
CONTEXT = typer.Option("8192", "--context", help="Context length in tokens.")


@app.command("pricing")
@guarded
def pricing_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS, batch: str = BATCH,
                context: str = CONTEXT,
                prompt_tokens: str = typer.Option("4096", "--prompt-tokens", help="Prefill length per sequence."),
                prefill_batch: str = typer.Option("1", "--prefill-batch", help="Sequences per prefill pass."),
                weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
                flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH, as_json: bool = JSON,
                as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """Input (prefill) vs output (decode) token cost and the output/input ratio vs published prices.

    The ratio the roofline predicts at each decode batch, against the 3-5x providers charge and the catalog's
    price sheets.

    Example: tokenomy pricing --model deepseek-v3 --hardware hgx-h200-8 --kv-dtype fp8
    """
    from tokenomy.econ import pricing as ep

    sv = serving(model, hardware, chips, weight_dtype, kv_dtype, usd_per_chip_hour, flops_fraction, hbm_fraction,
                 overhead_s)
    C, P = num("context", context, integer=True), num("prompt-tokens", prompt_tokens, integer=True)
    if P > C:
        raise UsageError(f"--prompt-tokens: must be <= --context ({C}), got {P}")
    pb = num("prefill-batch", prefill_batch, integer=True)
    rows = [ep.price_ratio(sv, b, C, P, pb).as_dict() for b in int_list("batch", batch)]
    sheets = ep.price_sheet_rows(loader.price_file(n) for n in loader.price_names())
    if show_explain and not (as_json or as_csv):
        explain([f"[bold]{sv.label()}[/bold]",
                 f"  input: prefill of {P} tokens x batch {pb}: $/Mtok = n*$/chip-s*step/(B*len_pass)*1e6",
                 f"  output: decode at context {C}: $/Mtok = n*$/chip-s*step/B*1e6",
                 "  output/input = MFU_prefill/MFU_decode (= decode t_mem/t_compute when prefill is at the roofline)"])
    show({"rows": rows, "price_sheets": sheets}, "rows", as_json=as_json, as_csv=as_csv,
         title=f"input vs output token cost: {sv.label()}, ${sv.price}/chip-h",
         columns=("decode_batch", "usd_per_mtok_input", "usd_per_mtok_output", "output_over_input", "prefill_mfu",
                  "decode_mfu", "decode_bound", "within_provider_range"))
    if not (as_json or as_csv):
        emit(sheets, as_json=False, as_csv=False, title="published price sheets (catalog/prices)",
             columns=("price_sheet", "input_usd_per_mtok", "output_usd_per_mtok", "output_over_input",
                      "implied_decode_mfu_fraction", "long_context_above_tokens", "long_context_input_multiplier"))


@app.command("speculate")
@guarded
def speculate_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS, batch: str = BATCH,
                  context: str = CONTEXT,
                  draft_tokens: str = typer.Option("3", "--draft-tokens", help="k: tokens drafted per step."),
                  acceptance: str = typer.Option("0.7", "--acceptance", help="alpha: per-token acceptance rate."),
                  draft_cost: str = typer.Option("0.05", "--draft-cost", help="Draft step time / target step time."),
                  base_batch: str = typer.Option(None, "--base-batch",
                                                 help="Fast mode reference batch (default: the operating batch)."),
                  target_speed: str = typer.Option("2.5", "--target-speed", help="Fast mode speed multiplier."),
                  weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
                  flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH, as_json: bool = JSON,
                  as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """Speculative decoding / multi-token prediction and "fast mode" (price multiplier of a speed-up).

    Per batch: tokens per step, speed-up and cost change (memory- vs compute-bound), and fast-mode multipliers.

    Example: tokenomy speculate --model deepseek-v3 --hardware gb200-nvl72 --draft-tokens 1 --acceptance 0.85
    """
    from tokenomy.econ import batch as eb
    from tokenomy.econ import speculative as es
    from tokenomy.core.roofline import BOUND_NAMES

    sv = serving(model, hardware, chips, weight_dtype, kv_dtype, usd_per_chip_hour, flops_fraction, hbm_fraction,
                 overhead_s)
    C = num("context", context, integer=True)
    k = num("draft-tokens", draft_tokens, integer=True)
    a = num("acceptance", acceptance, lo=0, hi=1, open_lo=False)
    d = num("draft-cost", draft_cost, lo=0, hi=0.999, open_lo=False)
    es.check_speculation(k, a, d)
    if k + 1 > C:
        raise UsageError(f"--draft-tokens: k+1 must be <= --context ({C})")
    B = np.array(int_list("batch", batch), float)
    base = (num("base-batch", base_batch, integer=True) if base_batch is not None
            else eb.summarize_batch(sv, C).operating_batch)
    if not base:
        raise UsageError(f"--base-batch: nothing fits on {sv.label()} at context {C}")
    sp = es.speculate(sv, B, C, k, a, d)
    fast = es.fast_mode_rows(sv, base, B, C, k, a, d)
    rows = []
    for i, f in enumerate(fast):
        ok = f["fits"]
        rows.append({"batch": f["batch"], "base_bound": BOUND_NAMES[int(sp.base_bound[i])] if ok else None,
                     "tokens_per_step": sp.tokens_per_step, "base_step_s": float(sp.base_step_s[i]) if ok else None,
                     "round_s": float(sp.round_s[i]) if ok else None,
                     "speedup": float(sp.speedup[i]) if ok else None, "cost_ratio": float(sp.cost_ratio[i]) if ok else None,
                     **{key: f[key] for key in ("speed_multiplier", "price_multiplier", "speed_multiplier_batch_only",
                                                "price_multiplier_batch_only", "fits")}})
    ts = num("target-speed", target_speed)
    plain = es.fast_mode_point(sv, base, C, ts)
    spec = es.fast_mode_point(sv, base, C, ts, k, a, d)
    spec_both = es.fast_mode_point(sv, base, C, ts, k, a, d, speculative_base=True)
    summary = {"expected_tokens_per_step": sp.tokens_per_step,
               "speedup_memory_bound_closed_form": float(es.speedup_memory_bound(a, k, d)),
               "speedup_compute_bound_closed_form": float(es.speedup_compute_bound(a, k, d)),
               "base_batch": base, "target_speed": ts,
               "fast_mode_batch_only": plain[0], "fast_mode_batch_only_price_multiplier": plain[1],
               "fast_mode_speculative_batch": spec[0], "fast_mode_speculative_price_multiplier": spec[1],
               "fast_mode_both_speculative_batch": spec_both[0],
               "fast_mode_both_speculative_price_multiplier": spec_both[1],
               "max_speed_multiplier_batch_only": max((f["speed_multiplier_batch_only"] or 0) for f in fast),
               "published_fast_mode": f"{es.FAST_MODE_PRICE:g}x price for {es.FAST_MODE_SPEED:g}x speed"}
    if show_explain and not (as_json or as_csv):
        explain([f"[bold]{sv.label()}: k = {k}, alpha = {a}, draft cost d = {d}[/bold]",
                 "  closed forms: memory-bound E/(1+k*d); compute-bound E/(k+1+k*d)",
                 f"  E[tokens/step] = (1-a^(k+1))/(1-a) = {sp.tokens_per_step:.3f}",
                 "  round = verify pass of k+1 tokens (engine, len_pass = k+1) + k*d*plain step",
                 "  speed-up = E*step/round; cost ratio = 1/speed-up (same batch and chips)",
                 f"  fast mode: the largest batch with {ts:g}x the tokens/s per user of plain decode at batch {base}, "
                 "and its $/token multiplier (batch only; with speculation; both modes speculating)"])
    show({"summary": summary, "rows": rows}, "rows", as_json=as_json, as_csv=as_csv,
         title=f"speculative decoding: {sv.label()}, context {C}",
         columns=("batch", "base_bound", "base_step_s", "round_s", "speedup", "cost_ratio", "speed_multiplier",
                  "price_multiplier", "fits"), summary=summary)


@app.command("cache")
@guarded
def cache_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS,
              prefix_tokens: str = typer.Option("32768", "--prefix-tokens", help="Cached prefix length."),
              hold: str = typer.Option("0.01,1,10,60,300,3600,86400", "--hold", help="Hold times in seconds."),
              stall: str = typer.Option("0", "--stall",
                                        help="Fraction of the serving unit idled while a prefix is copied in."),
              prefill_batch: str = typer.Option("1", "--prefill-batch", help="Batch of the rematerialising prefill."),
              weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
              flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH, as_json: bool = JSON,
              as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """KV cache tiers: where a cached prefix should live, vs rematerialising it, and implied cache prices.

    Hold + retrieve cost per storage tier, the cheapest tier vs hold time with break-even times, and the
    cache-hit and write prices that implies, against published prompt-caching prices.

    Example: tokenomy cache --model deepseek-v3 --hardware hgx-h200-8 --kv-dtype fp8 --hold 300,3600
    """
    from tokenomy.arch.params import kv_bytes_at_context
    from tokenomy.econ import kv_tiers as kt

    sv = serving(model, hardware, chips, weight_dtype, kv_dtype, usd_per_chip_hour, flops_fraction, hbm_fraction,
                 overhead_s)
    P = num("prefix-tokens", prefix_tokens, integer=True)
    holds = float_list("hold", hold)
    st = num("stall", stall, lo=0, hi=1, open_lo=False)
    size = kv_bytes_at_context(sv.model, P, sv.kv_dtype)
    remat = kt.remat_usd(sv, P, num("prefill-batch", prefill_batch, integer=True))
    tiers = [kt.hbm_tier(sv.hardware.chip, sv.price)] + [t for t in kt.tiers_from_catalog() if t.tier != "hbm"]
    gpu = sv.n * sv.price / 3600.0
    names, costs = kt.cheapest(size, holds, tiers, remat, gpu, st)
    rule = kt.drain_rule_choice(holds, [t.drain_s for t in tiers], [t.name for t in tiers])
    hold_rows = []
    for h, nm, c, r in zip(holds, names, costs, rule):
        dsc = kt.implied_discounts(size, h, tiers, remat, gpu, st)
        hold_rows.append({"hold_s": h, "cheapest": nm, "cheapest_usd": float(c), "drain_rule_tier": r,
                          "remat_usd": remat, "cheapest_caching_tier": dsc.tier, "hit_over_base": dsc.hit_fraction,
                          "write_premium_over_base": dsc.write_premium_fraction})
    payload = {"prefix_tokens": P, "prefix_bytes": size, "remat_usd": remat, "holds": hold_rows,
               "tiers": kt.tier_rows(size, holds[0], tiers, remat, gpu, st),
               "envelope": kt.envelope(size, tiers, remat, gpu, st), "published": published_cache_rows()}
    if show_explain and not (as_json or as_csv):
        explain([f"[bold]{sv.label()}: {P}-token prefix = {size / 1e9:.3g} GB[/bold]",
                 "  hold(T) = bytes/capacity * tier $/s * T; retrieve = bytes/bandwidth * (tier $/s + stall*GPU $/s)",
                 f"  rematerialise = prefill cost = ${remat:.4g}; drain rule: the tier whose cap/bw is nearest T"])
    show(payload, "holds", as_json=as_json, as_csv=as_csv, title=f"cached prefix: {sv.label()}",
         columns=("hold_s", "cheapest", "cheapest_usd", "drain_rule_tier", "remat_usd", "hit_over_base",
                  "write_premium_over_base"))
    if not (as_json or as_csv):
        emit(payload["tiers"], as_json=False, as_csv=False, title=f"tiers (total at a {holds[0]:g} s hold)",
             columns=("tier", "drain_s", "usd_per_byte_hour", "hold_usd_per_s", "retrieve_usd", "retrieve_s",
                      "total_usd", "max_hold_s"))
        emit(payload["envelope"], as_json=False, as_csv=False, title="cheapest option vs hold time",
             columns=("tier", "from_s", "to_s"))
        emit(payload["published"], as_json=False, as_csv=False, title="published prompt-caching prices / base input")


def published_cache_rows() -> list[dict]:
    rows = []
    for n in loader.price_names():
        p = loader.price_file(n)
        f = lambda v: None if v is None else v / p.input_usd_per_mtok  # noqa: E731
        rows.append({"price_sheet": n, "write_5m_over_base": f(p.cache_write_5m_usd_per_mtok),
                     "write_1h_over_base": f(p.cache_write_1h_usd_per_mtok), "read_over_base": f(p.cache_read_usd_per_mtok)})
    return rows


@app.command("lecture")
@guarded
def lecture_cmd(real: bool = typer.Option(False, "--real", help="JSON/CSV: the real-hardware table instead."),
                ids: str = typer.Option(None, "--ids", help="Only these claims, e.g. L1,L8."),
                as_json: bool = JSON, as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """Lecture claims L1-L28 computed from their stated inputs, then re-asked on today's hardware.

    Example: tokenomy lecture --json
    """
    from tokenomy.lecture import CLAIMS, evaluate, seed_corrections
    from tokenomy.lecture.real import closing_note, real_rows

    want = None if ids is None else [x.strip() for x in ids.split(",") if x.strip()]
    known = {c.id for c in CLAIMS}
    if want is not None and (not want or set(x.upper() for x in want) - known):
        raise UsageError(f"--ids: allowed {', '.join(c.id for c in CLAIMS)}; got {ids}")
    claims = [r.as_dict() for r in evaluate(want)]
    if real:
        rr = [r.as_dict() for r in real_rows()]
        emit(rr, as_json=as_json, as_csv=as_csv, title="the lecture on today's hardware")
        return
    if as_json:
        print(to_json(claims))
        return
    if as_csv:
        emit([{k: v for k, v in c.items() if k != "inputs"} for c in claims], as_json=False, as_csv=True)
        return
    shown = [{**c, "lecture_value": _short(c["lecture_value"]), "computed_value": _short(c["computed_value"])}
             for c in claims]
    emit(shown, as_json=False, as_csv=False, title="lecture.md §4.1: claims regenerated from their stated inputs",
         columns=("id", "claim", "lecture_value", "computed_value", "tolerance", "ok"))
    print(f"{sum(c['ok'] for c in claims)}/{len(claims)} within the lecture's tolerance")
    explain(escape(f"{c['id']}: {c['note']}") for c in claims if c["note"] and (not c["ok"] or c["id"] in NOTED))
    if show_explain:
        explain([f"{c['id']}: {c['formula']}; inputs {c['inputs']}" + (f"\n    {c['note']}" if c["note"] else "")
                 for c in claims])
    emit(seed_corrections(), as_json=False, as_csv=False, title="what the seed summaries got wrong (lecture.md §2.16)")
    rr = real_rows()
    emit([r.as_dict() for r in rr], as_json=False, as_csv=False, title="the same claims on today's hardware",
         columns=("id", "quantity", "setting", "lecture_value", "real_value", "ratio", "agrees"))
    explain(["[bold]Closing note: where today's hardware disagrees with the lecture[/bold]",
             *("  " + escape(line) for line in closing_note(rr))])


NOTED = ("L1", "L4", "L14", "L22")  # claims whose note the table prints (context the lecture gives)


def _short(v):
    if isinstance(v, (list, tuple)):
        return ", ".join(_short(x) for x in v)
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def demo(out: str = "out/report.html") -> None:
    """``tokenomy demo``: the lecture table (claims, seed corrections, real hardware, closing note), then the report."""
    from tokenomy.report import write_report

    lecture_cmd(real=False, ids=None, as_json=False, as_csv=False, show_explain=False)
    path = write_report(out)
    print(f"report written to {path.resolve()}")
