"""Catalog and roofline commands: models, model, hardware, decode, prefill."""

from __future__ import annotations

from pathlib import Path

import typer

from tokenomy.cli.app import UsageError, app, as_option, guarded
from tokenomy.cli.options import (ATTN_TP, CSV, DP, EFFICIENCY, EP, EXPLAIN, HOP_LATENCY, JSON, KV_BATCH, KV_DTYPE,
                                   LAYOUT, MODEL, PP, REDUNDANT_EXPERTS, SET, TP, USD_PER_KWH, FACILITY,
                                   WEIGHT_DTYPE, layout_flags, what_if)
from tokenomy.cli.render import emit, show_result
from tokenomy.units import DTYPE_BYTES


@app.command("models")
@guarded
def models_cmd(as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """List the model catalog (vendored Hugging Face config.json files and paper descriptions)."""
    from tokenomy.answers import catalog

    res = catalog.models()
    emit(res.payload(), as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)


@app.command("model")
@guarded
def model_cmd(name: str = typer.Argument(..., help="Catalog name, path to a config.json, or a directory."),
              kv_dtype: str = typer.Option("bf16", "--kv-dtype", help=f"One of {', '.join(DTYPE_BYTES)}."),
              as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """Parameters, KV bytes per token and layer kinds of one model.

    Example: tokenomy model deepseek-v3 --json
    """
    from tokenomy.answers import catalog

    res = catalog.model(name, kv_dtype)
    emit(res.payload(), as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)


@app.command("hardware")
@guarded
def hardware_cmd(name: str = typer.Argument(None, help="Chip or system name (or a what-if .toml); omit to list all."),
                 set_: str = SET,
                 vary: str = typer.Option(None, "--what-if", help="FIELD=x0.5..x4 (log-spaced) or FIELD=x0.5,x1,x2: "
                                          "sweep one field into TPOT, tokens/s per chip and $/Mtok (needs --model)."),
                 model: str = typer.Option(None, "--model", help="--what-if: the model served."),
                 concurrency: float = typer.Option(64, "--concurrency", help="--what-if: users (closed loop)."),
                 isl: int = typer.Option(1024, "--isl", help="--what-if: input tokens per request."),
                 osl: int = typer.Option(1024, "--osl", help="--what-if: output tokens per request."),
                 engine: str = typer.Option("vllm", "--engine", help="--what-if: vllm | sglang | trtllm."),
                 chips: int = typer.Option(None, "--chips", help="--what-if: chips (default: the system's)."),
                 plot: str = typer.Option(None, "--plot", help="--what-if: write an HTML page of the sweep."),
                 as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """The hardware catalog, or one chip/system in full (with --set: the what-if values, each marked).

    Example: tokenomy hardware gb200-nvl72 --json;  tokenomy hardware h100-sxm --set hbm_bytes_per_s=x2

    --what-if FIELD=x0.5..x4 --model M: one row per multiplier of FIELD, served at one workload on the layout chosen
    for the unmodified hardware (TPOT, TTFT, tokens/s per chip, $/Mtok, the FLOP/s-to-bandwidth ratio R and the
    balance batch): the lecture's "R ~300" re-asked.

    Example: tokenomy hardware hgx-h100-8 --what-if hbm_bytes_per_s=x0.5..x4 --model llama-3.1-70b --plot hbm.html
    """
    from tokenomy.answers import catalog

    if vary is not None:
        return _what_if(name, set_, vary, model, dict(concurrency=concurrency, isl=isl, osl=osl, engine=engine,
                                                      chips=chips), plot, as_json, as_csv)
    if set_ is not None and not name:
        raise UsageError("--set: needs a chip or system name, e.g. tokenomy hardware h100-sxm --set hbm_bytes_per_s=x2")
    res = catalog.hardware(what_if(name, set_) if name else None)
    if name:
        row = res.payload()
        if as_csv:
            row = {**{k: v for k, v in row.items() if k not in ("peak_flops_per_s", "hardware_overrides")},
                   **{f"peak_flops_per_s_{k}": v for k, v in row["peak_flops_per_s"].items()}}
        elif not as_json and "hardware_overrides" in row:  # the table says which numbers were set, in one cell
            row["hardware_overrides"] = "; ".join(f"{o['field']} {o['base'] or 0:.4g} -> {o['value']:.4g}"
                                                  for o in row["hardware_overrides"])
        emit(row, as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)
        return
    rows = res.payload()
    emit(rows if as_json else [{k: v for k, v in r.items() if k != "peak_flops_per_s"} for r in rows],
         as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)


def _what_if(name, set_, vary, model, workload: dict, plot, as_json, as_csv) -> None:
    """tokenomy hardware NAME --what-if FIELD=RANGE --model M: answers.what_if, its table, and --plot's page."""
    from tokenomy.answers.hardware_sweep import what_if as sweep

    field, eq, factors = vary.partition("=")
    if not eq or not field.strip() or not factors.strip():
        raise UsageError(f"--what-if: {vary!r} is not FIELD=RANGE, e.g. hbm_bytes_per_s=x0.5..x4")
    if not name or not model:
        raise UsageError("--what-if: needs a chip or system name and --model, e.g. tokenomy hardware hgx-h100-8 "
                         "--what-if hbm_bytes_per_s=x0.5..x4 --model llama-3.1-70b")
    if plot is not None and (not plot.endswith(".html") or not Path(plot).resolve().parent.is_dir()):
        raise UsageError(f"--plot: {plot!r} must be an .html file in an existing folder")
    try:
        res = sweep(model, what_if(name, set_), field=field.strip(), factors=factors.strip(), **workload)
    except ValueError as e:
        msg = str(e)
        raise UsageError(f"--what-if: {msg.partition(': ')[2]}" if msg.startswith(("field:", "factors:")) else
                         as_option(msg)) from None
    show_result(res, as_json=as_json, as_csv=as_csv)
    if plot:
        import plotly.io as pio

        from tokenomy.plots.what_if import what_if_figure

        with open(plot, "w", encoding="utf-8") as f:
            f.write(pio.to_html(what_if_figure(res.rows(), res.title), include_plotlyjs=True, full_html=True,
                                validate=False))
        if not as_json and not as_csv:
            typer.echo(f"plot: {plot}")


def _dtype(opt: str, v: str | None) -> str | None:
    if v is not None and v not in DTYPE_BYTES:
        raise UsageError(f"--{opt}: {v!r} is not a dtype; allowed: {', '.join(DTYPE_BYTES)}")
    return v


def efficiency_option(efficiency: str, flops_fraction: float | None, hbm_fraction: float | None,
                      overhead_s: float | None):
    """--efficiency by name, or a custom set when any of --flops-fraction/--hbm-fraction/--overhead-s is given."""
    if (flops_fraction, hbm_fraction, overhead_s) == (None, None, None):
        return efficiency
    from tokenomy.core.efficiency import Efficiency

    return Efficiency(flops_fraction=1.0 if flops_fraction is None else flops_fraction,
                      hbm_fraction=1.0 if hbm_fraction is None else hbm_fraction,
                      overhead_s=0.0 if overhead_s is None else overhead_s, name="custom")


def _pass_command(kind: str):
    doc = {"decode": "One decode step (1 new token per sequence) vs batch and context, on a real layout.\n\n"
                     "step_s is the calibrated estimate (the chip's fitted efficiency terms), roofline_step_s the bound "
                     "on the same layout. Without --tp/--ep/--pp/--dp the best valid layout over all the chips is used "
                     "(the rule is printed); --layout ideal asks for the even-split bound no layout reaches.\n\n"
                     "Example: tokenomy decode --model deepseek-v3 --hardware gb200-nvl72 --batch 1,64,2048\n\n"
                     "With a layout: tokenomy decode --model deepseek-v3 --hardware hgx-h100-8 --chips 144 --ep 144 "
                     "--redundant-experts 32",
           "prefill": "A prefill pass of the whole context (or --len-pass new tokens over a cached prefix).\n\n"
                      "Example: tokenomy prefill --model llama-3.1-70b --hardware hgx-h100-8 --batch 1,8 --context 8192"}

    @guarded
    def cmd(model: str = MODEL,
            hardware: str = typer.Option(..., "--hardware", help="Chip or system name (tokenomy hardware)."),
            set_: str = SET,
            chips: int = typer.Option(None, "--chips", help="Number of chips (default: the system's)."),
            batch: str = typer.Option("1,8,64", "--batch", help="Comma list or a..b powers of two."),
            context: str = typer.Option("2048", "--context", help="Context length(s) in tokens."),
            len_pass: int = typer.Option(None, "--len-pass", help="prefill: new tokens per sequence (default all)."),
            weight_dtype: str = WEIGHT_DTYPE, kv_dtype: str = KV_DTYPE,
            efficiency: str = EFFICIENCY,
            flops_fraction: float = typer.Option(None, "--flops-fraction", help="Custom set: fraction of peak FLOP/s."),
            hbm_fraction: float = typer.Option(None, "--hbm-fraction", help="Custom set: fraction of HBM bandwidth."),
            overhead_s: float = typer.Option(None, "--overhead-s", help="Custom set: fixed per-step overhead, s."),
            tp: int = TP, ep: int = EP, pp: int = PP, dp: int = DP, redundant_experts: int = REDUNDANT_EXPERTS,
            attn_tp: bool = ATTN_TP, kv_batch: bool = KV_BATCH, layout: str = LAYOUT,
            hop_latency: float = HOP_LATENCY, usd_per_kwh: float = USD_PER_KWH, facility: str = FACILITY,
            as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
        from tokenomy.answers import passes

        res = getattr(passes, kind)(model, what_if(hardware, set_), batch=batch, context=context,  # parsed by the answer's door
                          **({"len_pass": len_pass} if kind == "prefill" else {}), chips=chips,
                          **layout_flags(tp, ep, pp, dp, redundant_experts, attn_tp, kv_batch), layout=layout,
                          weight_dtype=weight_dtype,
                          kv_dtype=kv_dtype,
                          efficiency=efficiency_option(efficiency, flops_fraction, hbm_fraction, overhead_s),
                          hop_latency=hop_latency, usd_per_kwh=usd_per_kwh, facility=facility)
        show_result(res, as_json=as_json, as_csv=as_csv, show=show)

    cmd.__doc__ = doc[kind]
    app.command(kind)(cmd)
    if kind == "decode":  # the calibrated estimate is every decode's answer; `estimate` stays as its alias
        app.command("estimate", help="Alias of decode: the calibrated step time with the roofline bound beside it.")(
            cmd)


_pass_command("decode")
_pass_command("prefill")


@app.command("demo")
@guarded
def demo_cmd(out: str = typer.Option("out/report.html", "--out", help="Where to write the HTML report.")) -> None:
    """The main job on embedded defaults: the lecture's claims L1-L28 regenerated, re-asked on today's hardware
    (DeepSeek-V3 on GB200 NVL72 and 8 x H200), and an HTML report with plots."""
    from tokenomy.cli.serving_econ import demo

    demo(out)
