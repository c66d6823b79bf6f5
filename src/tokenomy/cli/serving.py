"""Serving-economics commands: batch, latency, context, pricing, speculate, cache, lecture.

Numbers arrive as text and are parsed here so that every bad value gets the one-line error (exit code 2).
"""

from __future__ import annotations

import numpy as np
import typer

from tokenomy.catalog import loader
from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.foundation import _dtype
from tokenomy.cli.options import CSV, EXPLAIN, JSON
from tokenomy.cli.render import emit, explain, fmt_cell, to_json
from tokenomy.core.roofline import Efficiency
from tokenomy.econ.cost import Serving

MODEL = typer.Option(None, "--model", help="Catalog name, config.json path, or directory (tokenomy models).")
HARDWARE = typer.Option(None, "--hardware", help="Chip or system name (tokenomy hardware).")
CHIPS = typer.Option(None, "--chips", help="Number of chips (default: the system's).")
WDT = typer.Option(None, "--weight-dtype", help="Override the checkpoint's weight dtype.")
KVDT = typer.Option("bf16", "--kv-dtype", help="KV cache dtype.")
PRICE = typer.Option(None, "--usd-per-chip-hour", help="Rental price (default: the catalog's).")
FF = typer.Option("1.0", "--flops-fraction", help="Achievable fraction of peak FLOP/s.")
HF = typer.Option("1.0", "--hbm-fraction", help="Achievable fraction of HBM bandwidth.")
OH = typer.Option("0", "--overhead-s", help="Fixed per-step overhead in seconds.")


def num(name: str, text, lo: float | None = 0.0, hi: float | None = None, integer: bool = False,
        open_lo: bool = True) -> float:
    """Parse one number, or raise a one-line UsageError naming the option and the allowed range."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--{name}: {text!r} is not a number") from None
    bad = (not np.isfinite(v) or (integer and v != int(v)) or (lo is not None and (v <= lo if open_lo else v < lo))
           or (hi is not None and v > hi))
    if bad:
        rng = f"{'>' if open_lo else '>='} {lo:g}" if lo is not None else ""
        rng += (" and " if rng and hi is not None else "") + (f"<= {hi:g}" if hi is not None else "")
        raise UsageError(f"--{name}: must be {'an integer ' if integer else 'a number '}{rng}, got {text}")
    return int(v) if integer else v


def float_list(name: str, text: str) -> list[float]:
    return [num(name, p.strip()) for p in str(text).split(",")]


def serving(model, hardware, chips, weight_dtype, kv_dtype, price, ff, hf, oh) -> Serving:
    if not model:
        raise UsageError("--model: required; a catalog name (tokenomy models), a config.json path or a directory")
    if not hardware:
        raise UsageError("--hardware: required; a chip or system name (tokenomy hardware)")
    eff = Efficiency(num("flops-fraction", ff, hi=1), num("hbm-fraction", hf, hi=1), num("overhead-s", oh, open_lo=False))
    return Serving(loader.model(model), loader.hardware(hardware),
                   None if chips is None else num("chips", chips, integer=True),
                   _dtype("weight-dtype", weight_dtype), _dtype("kv-dtype", kv_dtype), eff,
                   None if price is None else num("usd-per-chip-hour", price))


def show(payload: dict, rows_key: str, *, as_json: bool, as_csv: bool, title: str, columns, summary: dict | None = None,
         notes=()) -> None:
    """JSON: the whole payload; CSV: the rows; table: the rows, then the summary as key/value lines."""
    if as_json:
        print(to_json(payload))
        return
    emit(payload[rows_key], as_json=False, as_csv=as_csv, title=title, columns=columns)
    if not as_csv and summary:
        emit([{"quantity": k, "value": fmt_cell(k, v)} for k, v in summary.items()], as_json=False, as_csv=False,
             title="summary", notes=notes)


# ---- batch ----------------------------------------------------------------------------------------------


@app.command("batch")
@guarded
def batch_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS,
              batch: str = typer.Option("1..16384", "--batch", help="Comma list or a..b powers of two."),
              context: str = typer.Option("8192", "--context", help="Context length in tokens."),
              weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE, flops_fraction: str = FF,
              hbm_fraction: str = HF, overhead_s: str = OH, as_json: bool = JSON, as_csv: bool = CSV,
              show_explain: bool = EXPLAIN) -> None:
    """Decode cost and speed vs batch: balance batch, unbatched penalty, operating point, fit.

    Per batch: step time and its terms, tokens/s per chip and per user, $/Mtok, MFU, memory per chip and fit.
    Summary: balance batches (weights only, and with KV), unbatched penalty, the lecture's operating point
    (2 x balance, capped by memory) and the largest batch that fits.

    Example: tokenomy batch --model deepseek-v3 --hardware gb200-nvl72 --kv-dtype fp8
    """
    from tokenomy.econ import batch as eb

    sv = serving(model, hardware, chips, weight_dtype, kv_dtype, usd_per_chip_hour, flops_fraction, hbm_fraction,
                 overhead_s)
    C = num("context", context, integer=True)
    B = np.array(int_list("batch", batch), float)
    rows = eb.batch_rows(sv.terms(B, C))
    s = eb.summarize_batch(sv, C).as_dict()
    if show_explain and not (as_json or as_csv):
        explain(batch_explain(sv, s))
    notes = [] if s["max_batch_fit"] else [
        f"[red]nothing fits: one sequence at context {C} already needs {fmt_cell('bytes', float(sv.run(1.0, C).step.memory_per_chip_bytes))}"
        f" per chip on {sv.label()}[/red]"]
    show({"summary": s, "rows": rows}, "rows", as_json=as_json, as_csv=as_csv,
         title=f"batch economics: {sv.label()}, context {C}, ${sv.price}/chip-h",
         columns=("batch", "step_s", "matmul_s", "weights_s", "kv_s", "bound", "tokens_per_s_per_chip",
                  "tokens_per_s_per_user", "usd_per_mtok", "mfu", "memory_per_chip_bytes", "fits"), summary=s,
         notes=notes)


def batch_explain(sv: Serving, s: dict) -> list[str]:
    return [
        f"[bold]{sv.label()}[/bold]",
        f"  R = (peak/2)*bytes_per_weight/HBM_bw = {s['lecture_ratio']:.1f}; sparsity = N_total/N_active = "
        f"{s['sparsity']:.2f}",
        f"  lecture balance batch B* = R*sparsity = {s['lecture_balance_batch']:.0f} (every expert read each step)",
        f"  engine balance (weight matmul time = weight fetch time, experts touched E(1-(1-k/E)^B)): "
        f"{_g(s['balance_batch'])}; with KV and attention: {_g(s['balance_batch_with_kv'])}",
        f"  operating batch = min(2*B*, max fit {s['max_batch_fit']}) = {_g(s['operating_batch'])}"
        f"{' (memory binds)' if s['memory_binds'] else ''}",
        f"  $/Mtok = n*$/chip-s*step/B*1e6; floor (B->inf) = {s['cost_floor_usd_per_mtok']:.4g}; "
        f"B=1: {_g(s['cost_batch1_usd_per_mtok'])} -> unbatched penalty {_g(s['unbatched_penalty'])}",
    ]


def _g(v) -> str:
    return "-" if v is None else f"{v:.4g}"


# ---- latency --------------------------------------------------------------------------------------------


@app.command("latency")
@guarded
def latency_cmd(model: str = MODEL, hardware: str = HARDWARE, chips: str = CHIPS,
                batch: str = typer.Option("1..16384", "--batch", help="Comma list or a..b powers of two."),
                context: str = typer.Option("8192", "--context", help="Context length in tokens."),
                tick_s: str = typer.Option(None, "--tick-s", help="Departure interval (default: the step time)."),
                global_tokens_per_s: str = typer.Option("5e8", "--global-tokens-per-s",
                                                        help="Global traffic to compare one unit with."),
                weight_dtype: str = WDT, kv_dtype: str = KVDT, usd_per_chip_hour: str = PRICE,
                flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH, as_json: bool = JSON,
                as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """Train-departure schedule: HBM drain time per chip, worst-case latency, per-user vs per-chip Pareto.

    Without --model: the drain time (capacity / bandwidth) of every chip. With --model: per batch, the step,
    worst-case latency (wait + run), one unit's tokens/s, its share of global traffic and the Pareto flag.

    Example: tokenomy latency --model deepseek-v3 --hardware hgx-h200-8
    """
    from tokenomy.econ import latency as el

    chips_all = [loader.hardware(n).chip for n in loader.chip_names()]
    drain = el.drain_rows(chips_all if not hardware else [loader.hardware(hardware).chip])
    if not model:
        if show_explain and not (as_json or as_csv):
            explain(["drain_s = HBM capacity / HBM bandwidth: the step time that reads all of HBM once"])
        emit(drain, as_json=as_json, as_csv=as_csv, title="HBM drain time per chip",
             columns=("chip", "hbm_bytes", "hbm_bytes_per_s", "drain_s", "preliminary"))
        return
    sv = serving(model, hardware, chips, weight_dtype, kv_dtype, usd_per_chip_hour, flops_fraction, hbm_fraction,
                 overhead_s)
    tick = None if tick_s is None else num("tick-s", tick_s)
    g = num("global-tokens-per-s", global_tokens_per_s)
    C = num("context", context, integer=True)
    rows = el.schedule_rows(sv.terms(np.array(int_list("batch", batch), float), C), sv.n, tick, g)
    if show_explain and not (as_json or as_csv):
        explain([f"[bold]{sv.label()}[/bold]", "  worst-case latency = tick (wait for the next departure) + step (run)",
                 "  unit tokens/s = B/step; fraction = unit / global "
                 f"({g:.3g} tok/s); per user = 1/step; per chip = B/(step*{sv.n})"])
    show({"drain": drain, "schedule": rows}, "schedule", as_json=as_json, as_csv=as_csv,
         title=f"departure schedule: {sv.label()}, context {C}",
         columns=("batch", "step_s", "worst_case_latency_s", "unit_tokens_per_s", "fraction_of_global",
                  "tokens_per_s_per_user", "tokens_per_s_per_chip", "bound", "pareto", "fits"),
         summary={f"drain_s ({d['chip']})": d["drain_s"] for d in drain})


# ---- context --------------------------------------------------------------------------------------------


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
                flops_fraction: str = FF, hbm_fraction: str = HF, overhead_s: str = OH, as_json: bool = JSON,
                as_csv: bool = CSV, show_explain: bool = EXPLAIN) -> None:
    """Context length: compute/memory crossover, MFU vs context, Goldilocks zone, price-step inverse.

    Crossover (large batch and at --batch), attention's quadratic term, sparse attention, the largest context
    that fits, and the KV bytes/token a price step implies, checked against real architectures.

    Example: tokenomy context --model llama-3.1-70b --hardware hgx-h100-8 --batch 64 --kv-dtype fp8
    """
    from tokenomy.econ import context as ec

    sv = serving(model, hardware, chips, weight_dtype, kv_dtype, usd_per_chip_hour, flops_fraction, hbm_fraction,
                 overhead_s)
    B = num("batch", batch, integer=True)
    sc, sp = num("sparse-const", sparse_const), num("sparse-exponent", sparse_exponent, hi=1)
    rows = ec.context_rows(sv, B, int_list("context", context))
    s = ec.summarize_context(sv, B, num("band", band, lo=1), sc, sp).as_dict()
    inverse = ec.inverse_rows(sv, num("step-context", step_context))
    if show_explain and not (as_json or as_csv):
        explain([f"[bold]{sv.label()}, batch {B}[/bold]",
                 "  crossover (large B): per-sequence KV time = compute time; lecture form len* = N_active/(R*bytes_tok)",
                 "  at batch B: B*compute = weights + B*KV(len); MFU = compute / max(compute, memory)",
                 f"  Goldilocks: compute and memory within x{band} of each other; sparse: reads min(len, {sc:g}*len^{sp:g})",
                 "  inverse: bytes_tok = 2*N_active*HBM_bw/(peak*len_step) (= N_active/(R*len*))"])
    show({"summary": s, "rows": rows, "inverse": inverse}, "rows", as_json=as_json, as_csv=as_csv,
         title=f"context: {sv.label()}, batch {B}",
         columns=("context", "step_s", "compute_s", "attention_s", "weights_s", "kv_s", "bound", "mfu",
                  "usd_per_mtok", "fits"), summary=s)
    if not (as_json or as_csv):
        emit(inverse, as_json=False, as_csv=False, title="implied KV bytes/token vs real architectures",
             columns=("architecture", "kv_bytes_per_token", "implied_kv_bytes_per_token", "ratio",
                      "crossover_context"))

