"""Serving-economics commands, part 2: pricing, speculate, cache, lecture, and demo (shared parsing: cli/serving.py).

Thin typer layers over tokenomy.answers.economics: parse, call the answer, render its Result.
"""

from __future__ import annotations

import typer

from tokenomy.cli.app import app, guarded
from tokenomy.cli.options import CSV, EFFICIENCY, EXPLAIN, JSON, LAYOUT, REDUNDANT_EXPERTS, SET, what_if
from tokenomy.cli.render import emit, explain, to_json
from tokenomy.cli.serving import (BATCH, CHIPS, CONTEXT, DP, EP, FF, HARDWARE, HF, KVDT, MODEL, OH, PP, PRICE, TP,
                                  WDT, deployment_kw)
from tokenomy.cli.render import show_result


@app.command("pricing")
@guarded
def pricing_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS, batch: str = BATCH,
                context: str = CONTEXT,
                prompt_tokens: str = typer.Option("4096", "--prompt-tokens", help="Prefill length per sequence."),
                prefill_batch: str = typer.Option("1", "--prefill-batch", help="Sequences per prefill pass."),
                weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
                efficiency: str = EFFICIENCY, flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH,
                tp: str = TP, ep: str = EP, pp: str = PP, dp: str = DP, redundant_experts: int = REDUNDANT_EXPERTS,
                layout: str = LAYOUT, set_: str = SET, as_json: bool = JSON, as_csv: bool = CSV,
                show_explain: bool = EXPLAIN) -> None:
    """Input (prefill) vs output (decode) token cost and the output/input ratio vs published prices.

    The ratio the engine predicts at each decode batch (calibrated, real layouts: decode and prefill each on its
    best layout over the chips), against the 3-5x providers charge and the catalog's price sheets.

    Example: tokenomy pricing --model deepseek-v3 --hardware hgx-h200-8 --kv-dtype fp8
    """
    from tokenomy.answers import economics

    kw = deployment_kw({**locals(), "hardware": what_if(hardware, set_)})
    res = economics.pricing(**kw, batch=batch, context=context, prompt_tokens=prompt_tokens,
                 prefill_batch=prefill_batch)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show_explain,
           tables=(("price_sheets", "published price sheets (catalog/prices)",
                    ("price_sheet", "input_usd_per_mtok", "output_usd_per_mtok", "output_over_input",
                     "implied_decode_mfu_fraction", "long_context_above_tokens", "long_context_input_multiplier")),))


@app.command("speculate")
@guarded
def speculate_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS, batch: str = BATCH,
                  context: str = CONTEXT,
                  draft: str = typer.Option("model", "--draft",
                                            help="model: a draft model priced by --draft-cost; mtp: the model's own "
                                                 "multi-token-prediction module(s) through the engine."),
                  draft_tokens: str = typer.Option(None, "--draft-tokens",
                                                   help="k: tokens drafted per step (default 3; mtp: the model's "
                                                        "MTP module count)."),
                  acceptance: str = typer.Option(None, "--acceptance",
                                                 help="alpha: per-token acceptance rate (default 0.7; mtp: 0.85, "
                                                      "DeepSeek-V3 report §5.4.3)."),
                  draft_cost: str = typer.Option(None, "--draft-cost",
                                                 help="Draft step time / target step time (default 0.05; not with "
                                                      "--draft mtp)."),
                  base_batch: str = typer.Option(None, "--base-batch",
                                                 help="Fast mode reference batch (default: the operating batch)."),
                  target_speed: str = typer.Option("2.5", "--target-speed", help="Fast mode speed multiplier."),
                  weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
                  efficiency: str = EFFICIENCY, flops_fraction: str = FF, hbm_fraction: str = HF,
                  overhead_s: str = OH, tp: str = TP, ep: str = EP, pp: str = PP, dp: str = DP,
                  redundant_experts: int = REDUNDANT_EXPERTS, layout: str = LAYOUT, set_: str = SET,
                  as_json: bool = JSON,
                  as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """Speculative decoding / multi-token prediction and "fast mode" (price multiplier of a speed-up).

    Per batch: tokens per step, speed-up and cost change (memory- vs compute-bound), and fast-mode multipliers.
    --draft mtp: the draft is the model's own MTP module (one more decoder layer + a 2D x D projection, sharing the
    embedding and head), k one-token passes through the engine on the same layout; its weights count in memory.

    Example: tokenomy speculate --model deepseek-v3 --hardware gb200-nvl72 --draft mtp
    """
    from tokenomy.answers import economics

    kw = deployment_kw({**locals(), "hardware": what_if(hardware, set_)})
    res = economics.speculate(**kw, batch=batch, context=context, draft=draft, draft_tokens=draft_tokens,
                 acceptance=acceptance, draft_cost=draft_cost, base_batch=base_batch, target_speed=target_speed)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show_explain)


@app.command("cache")
@guarded
def cache_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS,
              prefix_tokens: str = typer.Option("32768", "--prefix-tokens", help="Cached prefix length."),
              hold: str = typer.Option("0.01,1,10,60,300,3600,86400", "--hold", help="Hold times in seconds."),
              stall: str = typer.Option("0", "--stall",
                                        help="Fraction of the serving unit idled while a prefix is copied in."),
              prefill_batch: str = typer.Option("1", "--prefill-batch", help="Batch of the rematerialising prefill."),
              weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
              efficiency: str = EFFICIENCY, flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH,
              tp: str = TP, ep: str = EP, pp: str = PP, dp: str = DP, redundant_experts: int = REDUNDANT_EXPERTS,
              layout: str = LAYOUT, set_: str = SET, as_json: bool = JSON, as_csv: bool = CSV,
              show_explain: bool = EXPLAIN) -> None:
    """KV cache tiers: where a cached prefix should live, vs rematerialising it, and implied cache prices.

    Hold + retrieve cost per storage tier, the cheapest tier vs hold time with break-even times, and the
    cache-hit and write prices that implies, against published prompt-caching prices.

    Example: tokenomy cache --model deepseek-v3 --hardware hgx-h200-8 --kv-dtype fp8 --hold 300,3600
    """
    from tokenomy.answers import economics

    kw = deployment_kw({**locals(), "hardware": what_if(hardware, set_)})
    res = economics.cache(**kw, prefix_tokens=prefix_tokens, hold=hold, stall=stall, prefill_batch=prefill_batch)
    holds = res.rows()
    show_result(res, as_json=as_json, as_csv=as_csv, show=show_explain,
           tables=(("tiers", f"tiers (total at a {holds[0]['hold_s']:g} s hold)",
                    ("tier", "drain_s", "usd_per_byte_hour", "hold_usd_per_s", "retrieve_usd", "retrieve_s",
                     "total_usd", "max_hold_s")),
                   ("envelope", "cheapest option vs hold time", ("tier", "from_s", "to_s")),
                   ("published", "published prompt-caching prices / base input", None)))


@app.command("lecture")
@guarded
def lecture_cmd(real: bool = typer.Option(False, "--real", help="JSON/CSV: the real-hardware table instead."),
                ids: str = typer.Option(None, "--ids", help="Only these claims, e.g. L1,L8."),
                as_json: bool = JSON, as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """Lecture claims L1-L28 computed from their stated inputs, then re-asked on today's hardware.

    Example: tokenomy lecture --json
    """
    from rich.markup import escape

    from tokenomy.answers import economics

    want = None if ids is None else ids.split(",")
    res = economics.lecture(real=real, ids=want)
    if real:
        emit(res.rows(), as_json=as_json, as_csv=as_csv, title=res.title)
        return
    claims = res.rows()
    if as_json:
        print(to_json(claims))
        return
    if as_csv:
        emit([{k: v for k, v in c.items() if k != "inputs"} for c in claims], as_json=False, as_csv=True)
        return
    shown = [{**c, "lecture_value": _short(c["lecture_value"]), "computed_value": _short(c["computed_value"])}
             for c in claims]
    emit(shown, as_json=False, as_csv=False, title=res.title, columns=res.columns)
    print(f"{sum(c['ok'] for c in claims)}/{len(claims)} within the lecture's tolerance")
    explain(escape(f"{c['id']}: {c['note']}") for c in claims if c["note"] and (not c["ok"] or c["id"] in NOTED))
    if show_explain:
        explain(res.explain())
    emit(res.extra["seed_corrections"], as_json=False, as_csv=False,
         title="what the seed summaries got wrong (lecture.md §2.16)")
    rr = economics.lecture(real=True)
    emit(rr.rows(), as_json=False, as_csv=False, title="the same claims on today's hardware (calibrated, real layouts)",
         columns=("id", "quantity", "setting", "lecture_value", "real_value", "ratio", "agrees"))
    explain(["[bold]Closing note: where today's hardware disagrees with the lecture[/bold]",
             *("  " + escape(line) for line in rr.explain())])


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
