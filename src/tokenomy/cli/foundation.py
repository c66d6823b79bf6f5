"""Catalog and roofline commands: models, model, hardware, decode, prefill."""

from __future__ import annotations

import typer

from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.options import (ATTN_TP, CSV, DP, EFFICIENCY, EP, EXPLAIN, HOP_LATENCY, JSON, KV_BATCH, KV_DTYPE,
                                   LAYOUT, MODEL, PP, REDUNDANT_EXPERTS, TP, WEIGHT_DTYPE, layout_flags)
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
def hardware_cmd(name: str = typer.Argument(None, help="Chip or system name; omit to list all."),
                 as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """The hardware catalog, or one chip/system in full. Example: tokenomy hardware gb200-nvl72 --json"""
    from tokenomy.answers import catalog

    res = catalog.hardware(name)
    if name:
        row = res.payload()
        if as_csv:
            row = {**{k: v for k, v in row.items() if k != "peak_flops_per_s"},
                   **{f"peak_flops_per_s_{k}": v for k, v in row["peak_flops_per_s"].items()}}
        emit(row, as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)
        return
    rows = res.payload()
    emit(rows if as_json else [{k: v for k, v in r.items() if k != "peak_flops_per_s"} for r in rows],
         as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)


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
            hop_latency: float = HOP_LATENCY, as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
        from tokenomy.answers.passes import pass_answer

        res = pass_answer(kind, model, hardware, batch=int_list("batch", batch), context=int_list("context", context),
                          len_pass=len_pass if kind == "prefill" else None, chips=chips,
                          **layout_flags(tp, ep, pp, dp, redundant_experts, attn_tp, kv_batch), layout=layout,
                          weight_dtype=weight_dtype,
                          kv_dtype=kv_dtype,
                          efficiency=efficiency_option(efficiency, flops_fraction, hbm_fraction, overhead_s),
                          hop_latency=hop_latency)
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
