"""Catalog and roofline commands: models, model, hardware, decode, prefill."""

from __future__ import annotations

import numpy as np
import typer

from tokenomy.arch.model import ModelArch
from tokenomy.arch.params import count_params, kv_bytes_per_token, weight_bytes
from tokenomy.catalog import loader
from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.options import (CSV, EXPLAIN, FLOPS_FRACTION, HBM_FRACTION, HOP_LATENCY, JSON, KV_DTYPE, MODEL,
                                   WEIGHT_DTYPE)
from tokenomy.cli.render import emit, explain
from tokenomy.core.coeffs import coefficients
from tokenomy.core.explain import explain_pass
from tokenomy.core.inference import run_pass
from tokenomy.core.roofline import Efficiency
from tokenomy.specs import Hardware
from tokenomy.units import DTYPE_BYTES

PASS_COLUMNS = ("batch", "context", "calibrated_step_s", "step_s", "compute_s", "memory_s", "bound",
                "calibrated_tokens_per_s", "tokens_per_s", "mfu", "memory_per_chip_bytes", "fits")


def model_summary(name: str | ModelArch, kv_dtype: str = "bf16") -> dict:
    """What ``tokenomy model`` prints; ``name`` may also be an already-built ModelArch (the web's uploads)."""
    m = name if isinstance(name, ModelArch) else loader.model(name)
    p = count_params(m)
    kinds = sorted({layer.attention.kind for layer in m.layers})
    windows = sorted({layer.attention.window for layer in m.layers if layer.attention.window})
    moe = [layer.mlp for layer in m.layers if layer.mlp.kind == "moe"]
    return {
        "name": m.name, "model_type": m.model_type, "num_layers": m.num_layers, "hidden_size": m.hidden_size,
        "vocab_size": m.vocab_size, "total_params": p.total, "active_params": p.active,
        "active_params_excluding_embedding": p.active - (0 if m.tie_word_embeddings else p.embed),
        "attention": "+".join(kinds), "sliding_windows": windows,
        "num_experts": moe[0].num_experts if moe else 0, "experts_per_tok": moe[0].experts_per_tok if moe else 0,
        "moe_layers": len(moe), "kv_dtype": kv_dtype, "kv_bytes_per_token": kv_bytes_per_token(m, kv_dtype),
        "weight_bytes": weight_bytes(m), "quantization": {"dense": m.quantization.dense,
                                                          "expert": m.quantization.expert,
                                                          "embed": m.quantization.embed},
    }


@app.command("models")
@guarded
def models_cmd(as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """List the model catalog (vendored Hugging Face config.json files and paper descriptions)."""
    rows = [model_summary(n) for n in loader.model_names()]
    emit(rows, as_json=as_json, as_csv=as_csv, title="models",
         columns=("name", "model_type", "num_layers", "total_params", "active_params", "attention",
                  "kv_bytes_per_token", "weight_bytes"))


@app.command("model")
@guarded
def model_cmd(name: str = typer.Argument(..., help="Catalog name, path to a config.json, or a directory."),
              kv_dtype: str = typer.Option("bf16", "--kv-dtype", help=f"One of {', '.join(DTYPE_BYTES)}."),
              as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """Parameters, KV bytes per token and layer kinds of one model.

    Example: tokenomy model deepseek-v3 --json
    """
    row = model_summary(name, kv_dtype)
    emit(row, as_json=as_json, as_csv=as_csv, title=row["name"], columns=list(row))


def hardware_summary(name: str) -> dict:
    hw = loader.hardware(name)
    c = hw.chip
    return {"name": hw.name, "chip": c.name, "display_name": c.display_name, "num_chips": hw.num_chips,
            "scale_up_domain_size": hw.scale_up_domain_size, "peak_flops_per_s": {
                **{d: None for d in ("bf16", "fp8", "fp4", "int8")}, **c.peak_flops_per_s},
            "hbm_bytes": c.hbm_bytes, "hbm_bytes_per_s": c.hbm_bytes_per_s,
            "scale_up_bytes_per_s": c.scale_up.bytes_per_s, "scale_out_bytes_per_s": c.scale_out.bytes_per_s,
            "tdp_w": c.tdp_w, "usd_per_chip_hour": hw.usd_per_chip_hour, "preliminary": hw.preliminary}


@app.command("hardware")
@guarded
def hardware_cmd(name: str = typer.Argument(None, help="Chip or system name; omit to list all."),
                 as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """The hardware catalog, or one chip/system in full. Example: tokenomy hardware gb200-nvl72 --json"""
    if name:
        row = hardware_summary(name)
        if as_csv:
            row = {**{k: v for k, v in row.items() if k != "peak_flops_per_s"},
                   **{f"peak_flops_per_s_{k}": v for k, v in row["peak_flops_per_s"].items()}}
        emit(row, as_json=as_json, as_csv=as_csv, title=row["name"], columns=list(row))
        return
    rows = [hardware_summary(n) for n in loader.chip_names() + loader.system_names()]
    for r in rows:
        r["bf16_flops_per_s"] = r["peak_flops_per_s"].get("bf16")
    emit(rows if as_json else [{k: v for k, v in r.items() if k != "peak_flops_per_s"} for r in rows],
         as_json=as_json, as_csv=as_csv, title="hardware",
         columns=("name", "num_chips", "bf16_flops_per_s", "hbm_bytes", "hbm_bytes_per_s", "scale_up_bytes_per_s",
                  "usd_per_chip_hour"))


def _dtype(opt: str, v: str | None) -> str | None:
    if v is not None and v not in DTYPE_BYTES:
        raise UsageError(f"--{opt}: {v!r} is not a dtype; allowed: {', '.join(DTYPE_BYTES)}")
    return v


def run_pass_cmd(kind: str, model: str, hardware: str, chips: int | None, batch: str, context: str,
                 len_pass: int | None, weight_dtype: str | None, kv_dtype: str, flops_fraction: float,
                 hbm_fraction: float, overhead_s: float, as_json: bool, as_csv: bool, show: bool, *,
                 tp: int | None = None, ep: int | None = None, pp: int | None = None, dp: int | None = None,
                 hop_latency_s: float | None = None) -> None:
    if (tp, ep, pp, dp, hop_latency_s) != (None,) * 5:  # an explicit parallel layout (tokenomy.parallel)
        from tokenomy.cli.parallel import plan_pass_cmd

        return plan_pass_cmd(kind, model, hardware, chips, batch, context, len_pass, weight_dtype, kv_dtype,
                             Efficiency(flops_fraction, hbm_fraction, overhead_s), as_json, as_csv, show,
                             tp=tp, ep=ep, pp=pp, dp=dp, hop_latency_s=hop_latency_s)
    m, hw = loader.model(model), loader.hardware(hardware)
    r, c, rows, terms_from = pass_grid(kind, m, hw, int_list("batch", batch), int_list("context", context), len_pass,
                                       chips, weight_dtype, kv_dtype, Efficiency(flops_fraction, hbm_fraction,
                                                                                 overhead_s))
    if show and not (as_json or as_csv):
        for i in range(len(rows)):
            explain(explain_pass(r, c, i))
    title = (f"{kind}: {m.name} on {r.chips} x {hw.chip.name} (weights {r.weight_dtype}, KV {r.kv_dtype}, "
             f"compute {r.compute_dtype}); step_s is the roofline bound, calibrated_step_s uses the efficiency "
             f"terms fitted for {terms_from} (tokenomy validate)")
    notes = [f"[red]{row['batch']} x {row['context']}: does not fit: {row['why']}[/red]" for row in rows
             if not row["fits"]]
    emit(rows, as_json=as_json, as_csv=as_csv, title=title, columns=PASS_COLUMNS, notes=notes)


def pass_grid(kind: str, m: ModelArch, hw: Hardware, batch: list[int], context: list[int], len_pass: int | None,
              chips: int | None, weight_dtype: str | None, kv_dtype: str, eff: Efficiency):
    """The rows ``tokenomy decode|prefill --json`` prints (batch rows x context columns), shared with the web API.

    Returns (PassResult, coefficients, rows with the calibrated estimate beside the roofline, whose terms)."""
    if chips is not None and chips <= 0:
        raise UsageError(f"--chips must be a positive integer, got {chips}")
    if len_pass is not None and len_pass <= 0:
        raise UsageError(f"--len-pass must be a positive integer, got {len_pass}")
    B = np.array(batch, dtype=float)[:, None]
    C = np.array(context, dtype=float)[None, :]
    S = 1 if kind == "decode" else (C if len_pass is None else len_pass)
    c = coefficients(m)
    r = run_pass(m, hw, batch=B, context=C, len_pass=S, chips=chips, weight_dtype=_dtype("weight-dtype", weight_dtype),
                 kv_dtype=_dtype("kv-dtype", kv_dtype), eff=eff, coeffs=c)
    rows = r.rows()
    return r, c, rows, add_calibrated(rows, m, hw.name, B, C, S, chips, weight_dtype, kv_dtype)


def add_calibrated(rows: list[dict], model: ModelArch, hardware: str, B, C, S, chips, weight_dtype, kv_dtype) -> str:
    """Put the calibrated estimate (validation/estimate.py) beside each roofline row; returns whose terms."""
    from tokenomy.validation.estimate import calibrated_pass

    cal = calibrated_pass(model, hardware, batch=B, context=C, len_pass=S, chips=chips, weight_dtype=weight_dtype,
                          kv_dtype=kv_dtype)
    shape = np.broadcast(B, C, S).shape
    step_s = np.ravel(np.broadcast_to(cal["calibrated_step_s"], shape))
    bound = np.ravel(np.broadcast_to(cal["bound"], shape))
    for row, t, b in zip(rows, step_s, bound):
        ok = row["fits"] and np.isfinite(t)
        row["calibrated_step_s"] = float(t) if ok else None
        row["calibrated_tokens_per_s"] = row["batch"] * row["len_pass"] / float(t) if ok else None
        row["calibrated_bound"] = str(b) if ok else None
    return str(cal["terms_from"])


def _pass_command(kind: str):
    doc = {"decode": "One decode step (1 new token per sequence) vs batch and context.\n\n"
                     "Example: tokenomy decode --model deepseek-v3 --hardware gb200-nvl72 --batch 1,64,2048\n\n"
                     "With a layout: tokenomy decode --model deepseek-v3 --hardware gb200-nvl72 --ep 64 --pp 4",
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
            flops_fraction: float = FLOPS_FRACTION, hbm_fraction: float = HBM_FRACTION,
            overhead_s: float = typer.Option(0.0, help="Fixed per-step overhead in seconds."),
            tp: int = typer.Option(None, "--tp", help="Tensor-parallel degree (with --ep/--pp/--dp: a real layout)."),
            ep: int = typer.Option(None, "--ep", help="Expert-parallel degree (MoE; attention data-parallel)."),
            pp: int = typer.Option(None, "--pp", help="Pipeline stages (micro-batches = stages)."),
            dp: int = typer.Option(None, "--dp", help="Data-parallel replicas."),
            hop_latency: float = HOP_LATENCY, as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
        run_pass_cmd(kind, model, hardware, chips, batch, context, len_pass if kind == "prefill" else None,
                     weight_dtype, kv_dtype, flops_fraction, hbm_fraction, overhead_s, as_json, as_csv, show,
                     tp=tp, ep=ep, pp=pp, dp=dp, hop_latency_s=hop_latency)

    cmd.__doc__ = doc[kind]
    app.command(kind)(cmd)


_pass_command("decode")
_pass_command("prefill")


@app.command("demo")
@guarded
def demo_cmd(out: str = typer.Option("out/report.html", "--out", help="Where to write the HTML report.")) -> None:
    """The main job on embedded defaults: the lecture's claims L1-L28 regenerated, re-asked on today's hardware
    (DeepSeek-V3 on GB200 NVL72 and 8 x H200), and an HTML report with plots."""
    from tokenomy.cli.serving_econ import demo

    demo(out)
