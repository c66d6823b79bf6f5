"""Serving-economics commands: batch, latency, context (pricing, speculate, cache, lecture: cli/serving_econ.py).

Thin typer layers: parse the text options (one-line UsageError naming the option, exit 2), call the answer in
tokenomy.answers.economics, render its Result with cli/render.py.
"""

from __future__ import annotations

import typer

from tokenomy.cli.app import UsageError, app, guarded
from tokenomy.cli.foundation import _dtype, efficiency_option
from tokenomy.cli.options import CSV, DP, EFFICIENCY, EP, EXPLAIN, JSON, LAYOUT, PP, REDUNDANT_EXPERTS, SET, TP, what_if
from tokenomy.cli.render import show_result

MODEL = typer.Option(None, "--model", help="Catalog name, config.json path, or directory (tokenomy models).")
HARDWARE = typer.Option(None, "--hardware", help="Chip or system name (tokenomy hardware).")
CHIPS = typer.Option(None, "--chips", help="Number of chips (default: the system's).")
WDT = typer.Option(None, "--weight-dtype", help="Override the checkpoint's weight dtype.")
KVDT = typer.Option("bf16", "--kv-dtype", help="KV cache dtype.")
PRICE = typer.Option(None, "--usd-per-chip-hour", help="Rental price (default: the catalog's).")
FF = typer.Option(None, "--flops-fraction", help="Custom efficiency set: fraction of peak FLOP/s.")
HF = typer.Option(None, "--hbm-fraction", help="Custom efficiency set: fraction of HBM bandwidth.")
OH = typer.Option(None, "--overhead-s", help="Custom efficiency set: fixed per-step overhead in seconds.")
BATCH = typer.Option("1..16384", "--batch", help="Comma list or a..b powers of two.")
CONTEXT = typer.Option("8192", "--context", help="Context length in tokens.")


def opt(name: str, text):
    """An optional number option through the one grammar (answers/inputs), bounded by its row of the table."""
    from tokenomy.answers import inputs

    return None if text is None else inputs.number(name, text)


DEPLOYMENT_OPTIONS = ("model", "hardware", "chips", "weight_dtype", "kv_dtype", "usd_per_chip_hour", "efficiency",
                      "flops_fraction", "hbm_fraction", "overhead_s", "tp", "ep", "pp", "dp", "redundant_experts",
                      "layout")
FRACTIONS = ("flops_fraction", "hbm_fraction", "overhead_s")  # --efficiency's overrides, in efficiency_option's order


def deployment_kw(given: dict) -> dict:
    """The keywords every economics answer shares, parsed from a command's options ``given`` (its locals, the
    hardware with --set applied; DEPLOYMENT_OPTIONS are read, the rest ignored; model and hardware are required)."""
    kw = {k: given[k] for k in DEPLOYMENT_OPTIONS}
    if not kw["model"]:
        raise UsageError("--model: required; a catalog name (tokenomy models), a config.json path or a directory")
    if not kw["hardware"]:
        raise UsageError("--hardware: required; a chip or system name (tokenomy hardware)")
    # the efficiency's overrides folded into it; the degrees and numbers parsed by the answers' door
    kw["efficiency"] = efficiency_option(kw["efficiency"], *(opt(k, kw.pop(k)) for k in FRACTIONS))
    kw["weight_dtype"], kw["kv_dtype"] = _dtype("weight-dtype", kw["weight_dtype"]), _dtype("kv-dtype", kw["kv_dtype"])
    return kw


@app.command("batch")
@guarded
def batch_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS, batch: str = BATCH,
              context: str = CONTEXT, weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
              efficiency: str = EFFICIENCY, flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH,
              tp: str = TP, ep: str = EP, pp: str = PP, dp: str = DP, redundant_experts: int = REDUNDANT_EXPERTS,
              layout: str = LAYOUT, set_: str = SET, as_json: bool = JSON, as_csv: bool = CSV,
              show_explain: bool = EXPLAIN) -> None:
    """Decode cost and speed vs batch: balance batch, unbatched penalty, operating point, fit.

    Per batch: the calibrated step on a real layout (roofline bound beside it) and its terms, tokens/s per chip and
    per user, $/Mtok, MFU, memory per chip and fit. Summary: balance batches (weights only, and with KV), unbatched
    penalty, the lecture's operating point (2 x balance, capped by memory) and the largest batch that fits.
    Without --tp/--ep/--pp/--dp the best valid layout over all the chips is used (the rule is printed).

    Example: tokenomy batch --model deepseek-v3 --hardware gb200-nvl72 --kv-dtype fp8
    """
    from tokenomy.answers import economics

    kw = deployment_kw({**locals(), "hardware": what_if(hardware, set_)})
    res = economics.batch(**kw, batch=batch, context=context)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show_explain)


@app.command("latency")
@guarded
def latency_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS, batch: str = BATCH,
                context: str = CONTEXT,
                tick_s: str = typer.Option(None, "--tick-s", help="Departure interval (default: the step time)."),
                global_tokens_per_s: str = typer.Option("5e8", "--global-tokens-per-s",
                                                        help="Global traffic to compare one unit with."),
                weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
                efficiency: str = EFFICIENCY, flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH,
                tp: str = TP, ep: str = EP, pp: str = PP, dp: str = DP, redundant_experts: int = REDUNDANT_EXPERTS,
                layout: str = LAYOUT, set_: str = SET, as_json: bool = JSON, as_csv: bool = CSV,
              show_explain: bool = EXPLAIN) -> None:
    """Train-departure schedule: HBM drain time per chip, worst-case latency, per-user vs per-chip Pareto.

    Without --model: the drain time (capacity / bandwidth) of every chip. With --model: per batch, the step,
    worst-case latency (wait + run), one unit's tokens/s, its share of global traffic and the Pareto flag.

    Example: tokenomy latency --model deepseek-v3 --hardware hgx-h200-8
    """
    from tokenomy.answers import economics

    if not model:
        res = economics.latency(hardware=what_if(hardware, set_))
        show_result(res, as_json=as_json, as_csv=as_csv, show=show_explain)
        return
    kw = deployment_kw({**locals(), "hardware": what_if(hardware, set_)})
    res = economics.latency(**kw, batch=batch, context=context, tick_s=tick_s, global_tokens_per_s=global_tokens_per_s)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show_explain,
           tables=(("drain", "HBM drain time", ("chip", "hbm_bytes", "hbm_bytes_per_s", "drain_s")),))


def _context_compare(given: dict) -> None:
    """``tokenomy context --compare M1 M2 ...``: answers.context_compare, one row per model (``given``: context's
    options, the hardware with --set applied)."""
    from tokenomy.answers.architectures import context_compare

    compare, models, model, hardware = (given[k] for k in ("compare", "models", "model", "hardware"))
    if not compare:
        raise UsageError(f"models: {' '.join(models)!r} given without --compare; use --model for one model")
    if not models:
        raise UsageError("--compare: give at least one model, e.g. --compare deepseek-v4-pro llama-3.1-405b")
    if model:
        raise UsageError("--model: not with --compare; name every model after --compare")
    res = context_compare(models=list(models), hardware=hardware or "gb200-nvl72", chips=given["chips"],
                          kv_dtype=_dtype("kv-dtype", given["kv_dtype"]),
                          weight_dtype=_dtype("weight-dtype", given["weight_dtype"]),
                          usd_per_chip_hour=given["usd_per_chip_hour"],
                          efficiency=efficiency_option(given["efficiency"], None, None, None))
    show_result(res, as_json=given["as_json"], as_csv=given["as_csv"], show=given["show_explain"],
                tables=(("verdicts", 'the lecture\'s "context stalls at 100-200k", per architecture',
                         ("model", "claim", "why")),))


@app.command("context")
@guarded
def context_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS,
                batch: str = typer.Option("256", "--batch", help="Sequences per step."),
                context: str = typer.Option("1024..1048576", "--context", help="Context lengths (list or a..b)."),
                sparse_const: str = typer.Option("64", "--sparse-const",
                                                 help="Sparse attention reads c*len^p positions: c."),
                sparse_exponent: str = typer.Option("0.5", "--sparse-exponent", help="... and p."),
                band: str = typer.Option("2", "--band", help="Goldilocks: both terms within this factor."),
                step_context: str = typer.Option("200000", "--step-context",
                                                 help="Inverse problem: a price step at this context."),
                weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
                efficiency: str = EFFICIENCY, flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH,
                tp: str = TP, ep: str = EP, pp: str = PP, dp: str = DP, redundant_experts: int = REDUNDANT_EXPERTS,
                layout: str = LAYOUT, set_: str = SET, as_json: bool = JSON, as_csv: bool = CSV,
                show_explain: bool = EXPLAIN, compare: bool = typer.Option(False, "--compare",
                                             help="Compare the models named after it (one row per architecture)."),
                models: list[str] = typer.Argument(None, help="With --compare: the models to compare.",
                                                   show_default=False)) -> None:
    """Context length: compute/memory crossover, MFU vs context, Goldilocks zone, price-step inverse.

    Crossover (large batch and at --batch), attention's quadratic term, sparse attention, the largest context
    that fits, and the KV bytes/token a price step implies, checked against real architectures.

    --compare MODEL [MODEL ...]: per architecture, KV + state bytes per sequence at 1k..1M, the crossover, the
    largest context at batch 1 and at the balance batch, $/Mtok at 8k/128k/1M and a verdict on the lecture's
    "context stalls at 100-200k" (--hardware, default gb200-nvl72; --kv-dtype; --chips; --efficiency; --explain).

    Example: tokenomy context --model llama-3.1-70b --hardware hgx-h100-8 --batch 64 --kv-dtype fp8

    Example: tokenomy context --compare deepseek-v4-pro qwen3.5-397b-a17b kimi-k3 llama-3.1-405b --hardware gb200-nvl72
    """
    from tokenomy.answers import economics

    if compare or models:
        return _context_compare({**locals(), "hardware": what_if(hardware, set_)})

    kw = deployment_kw({**locals(), "hardware": what_if(hardware, set_)})
    res = economics.context(**kw, batch=batch, context=context, sparse_const=sparse_const,
                            sparse_exponent=sparse_exponent, band=band, step_context=step_context)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show_explain,
           tables=(("inverse", "implied KV bytes/token vs real architectures",
                    ("architecture", "kv_bytes_per_token", "implied_kv_bytes_per_token", "ratio", "crossover_context")),))
