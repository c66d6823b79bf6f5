"""Fidelity commands: `tokenomy validate` (published measurements vs the model; --against FILE: a user's benchmark
file vs the model), `tokenomy calibrate` (--from FILE: refit the terms a user's benchmark identifies; without it,
measure this machine with PyTorch and time real decode steps). `tokenomy estimate` is now an alias of `tokenomy
decode`, whose answer is the calibrated estimate with the roofline bound beside it."""

from __future__ import annotations

from pathlib import Path

import typer

from tokenomy.cli.app import UsageError, app, guarded
from tokenomy.cli.options import CSV, EFFICIENCY, JSON, SERVE_KV_DTYPE, WEIGHT_DTYPE
from tokenomy.cli.render import emit

# what a benchmark file cannot tell (validate --against, calibrate --from); answers.user_benchmark checks each
FORMAT = typer.Option(None, "--format", help="vllm | aiperf | guidellm (default: told by the file's content).")
HARDWARE = typer.Option(None, "--hardware", help="With --against/--from: the chip or system measured (required).")
CHIPS = typer.Option(None, "--chips", help="With --against/--from: chips serving the model (default: tp).")
TP = typer.Option(None, "--tp", help="With --against/--from: tensor-parallel degree (default 1).")
ENGINE = typer.Option(None, "--engine", help="With --against/--from: vllm | sglang | trtllm (default: the "
                      "file's backend, else vllm).")
ENGINE_VERSION = typer.Option(None, "--engine-version", help="With --against/--from: the engine version run.")
LOAD_CONCURRENCY = typer.Option(None, "--concurrency", help="Clients, where the file holds no load (an AIPerf CSV).")
LOAD_RATE = typer.Option(None, "--rate", help="Requests/s, where the file holds no load (an AIPerf CSV).")
PLOT = typer.Option(None, "--plot", help="Write an HTML page of predicted vs measured (log axes).")


def _setup(**kw) -> dict:
    """The answers' ``setup`` dict from the file options (those left off are not passed)."""
    return {k: v for k, v in kw.items() if v is not None}


def _check_plot(plot: str | None) -> None:
    if plot is not None and (not plot.endswith(".html") or not Path(plot).resolve().parent.is_dir()):
        raise UsageError(f"--plot: {plot!r} must be an .html file in an existing folder")


def _write_plot(path: str, rows: list[dict], series: tuple[str, ...], title: str) -> None:
    import plotly.io as pio

    from tokenomy.plots.fidelity import predicted_vs_measured

    with open(path, "w", encoding="utf-8") as f:
        f.write(pio.to_html(predicted_vs_measured(rows, series, title), include_plotlyjs=True, full_html=True,
                            validate=False))


def _show(res, as_json: bool, as_csv: bool) -> None:
    if as_json or as_csv:
        emit(res.payload() if as_json else res.rows(), as_json=as_json, as_csv=as_csv, title=res.title,
             columns=res.columns)
        return
    emit(res.rows(), as_json=False, as_csv=False, title=res.title, columns=res.columns, notes=res.notes)


@app.command("validate")
@guarded
def validate_cmd(source: list[str] = typer.Option(None, "--source", help="Only cases of these source ids."),
                 by: str = typer.Option("metric,chip", "--by",
                                        help="Group held-out errors by: metric, chip, bound, source, scenario, "
                                             "capacity_limited, model (comma-separated)."),
                 cases: bool = typer.Option(False, "--cases", help="One row per case instead of the summary."),
                 refit: bool = typer.Option(False, "--refit", help="Refit the efficiency terms on the training "
                                            "split and rewrite catalog/efficiency/*.toml first."),
                 loso: bool = typer.Option(False, "--loso", help="Also run leave-one-source-out (refits once per "
                                           "source; minutes)."),
                 write: Path = typer.Option(None, "--write", help="Write the markdown report here "
                                            "(docs/validation.md)."),
                 training: bool = typer.Option(False, "--training", help="The training cases alone: with --refit "
                                               "refit only the training terms, with --loso leave one source out "
                                               "over them (seconds)."),
                 against: Path = typer.Option(None, "--against", help="A benchmark result file to predict point "
                                              "by point instead: vllm bench serve --save-result JSON, AIPerf / "
                                              "GenAI-Perf profile export JSON or CSV, GuideLLM benchmarks JSON."),
                 fmt: str = FORMAT, model: str = typer.Option(None, "--model", help="With --against: the model "
                                                              "measured (default: the one the file names)."),
                 hardware: str = HARDWARE, chips: int = CHIPS, tp: int = TP, weight_dtype: str = WEIGHT_DTYPE,
                 kv_dtype: str = SERVE_KV_DTYPE, engine: str = ENGINE, engine_version: str = ENGINE_VERSION,
                 concurrency: int = LOAD_CONCURRENCY, rate: float = LOAD_RATE, efficiency: str = EFFICIENCY,
                 plot: str = PLOT, as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """Predict every published measurement in the validation catalog and report the error.

    Errors are held-out (cases the calibration never saw) unless --cases shows the split per row; the
    roofline bound is shown beside the calibrated estimate. Example: tokenomy validate --by metric,bound

    Your own benchmark: tokenomy validate --against result.json --hardware h100-sxm --tp 1 --plot fit.html
    """
    from tokenomy.answers.fidelity import validate

    if against is not None:
        _check_plot(plot)
        setup = _setup(format=fmt, model=model, hardware=hardware, chips=chips, tp=tp, weight_dtype=weight_dtype,
                       kv_dtype=kv_dtype, engine=engine, engine_version=engine_version, concurrency=concurrency,
                       rate=rate, efficiency=efficiency)
        res = validate(source=source or None, refit=refit, loso=loso, write=write, against=str(against), setup=setup)
        if plot:
            _write_plot(plot, res.rows(), ("predicted",), f"{res.title}<br>predicted vs measured")
        _show(res, as_json, as_csv)
        return
    if plot is not None:
        raise UsageError("--plot: draws a benchmark file's points; give --against FILE")
    res = validate(source=source or None, by=tuple(k.strip() for k in by.split(",") if k.strip()), cases=cases,
                   refit=refit, loso=loso, write=write, training=training)
    if as_json or as_csv or cases:
        emit(res.payload(), as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)
        return
    emit(res.rows(), as_json=False, as_csv=False, title=res.title, columns=res.columns, notes=res.notes)


@app.command("calibrate")
@guarded
def calibrate_cmd(from_file: Path = typer.Option(None, "--from", help="A benchmark result file (as validate "
                                                 "--against reads): refit the efficiency terms its points "
                                                 "identify instead of measuring this machine."),
                  hold_out: int = typer.Option(3, "--hold-out", help="With --from: hold out every k-th point "
                                               "(k >= 2) and report its error before and after."),
                  out: str = typer.Option(None, "--out", help="With --from: write the calibrated terms to this "
                                          ".toml (read back by --efficiency FILE)."),
                  fmt: str = FORMAT, hardware: str = HARDWARE, chips: int = CHIPS, tp: int = TP,
                  weight_dtype: str = WEIGHT_DTYPE, kv_dtype: str = SERVE_KV_DTYPE, engine: str = ENGINE,
                  engine_version: str = ENGINE_VERSION, concurrency: int = LOAD_CONCURRENCY, rate: float = LOAD_RATE,
                  plot: str = PLOT,
                  model: str = typer.Option(None, "--model", help="Dense catalog model to scale down (default "
                                            "llama-3.2-1b); with --from: the model measured (default: the file's)."),
                  layers: int = typer.Option(2, "--layers", help="Decoder layers to build."),
                  divisor: int = typer.Option(4, "--divisor", help="Divide heads and widths by this."),
                  vocab: int = typer.Option(8192, "--vocab", help="Vocabulary of the scaled model."),
                  batch: str = typer.Option("1,4,16", "--batch", help="Decode batch sizes."),
                  context: str = typer.Option("128,512", "--context", help="Cached positions before the step."),
                  steps: int = typer.Option(5, "--steps", help="Timed decode steps per point (fastest kept)."),
                  matmul: int = typer.Option(1024, "--matmul-size", help="Square GEMM size for FLOP/s."),
                  copy_mb: float = typer.Option(256.0, "--copy-mb", help="Buffer size for bandwidth."),
                  device: str = typer.Option(None, "--device", help="cpu or cuda (default: cuda when present)."),
                  as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """Measure this machine (matmul FLOP/s, memory bandwidth) with PyTorch, time real decode steps of a small
    transformer built from a catalog config, and print measured vs predicted step time.

    Example: tokenomy calibrate --model llama-3.2-1b --layers 2 --batch 1,8 --context 256

    From your own benchmark: tokenomy calibrate --from result.json --hardware h100-sxm --out terms.toml, then
    tokenomy serve ... --efficiency terms.toml
    """
    if from_file is not None:
        _calibrate_from(from_file, hold_out, out, plot, _setup(
            format=fmt, model=model, hardware=hardware, chips=chips, tp=tp, weight_dtype=weight_dtype,
            kv_dtype=kv_dtype, engine=engine, engine_version=engine_version, concurrency=concurrency, rate=rate),
            as_json, as_csv)
        return
    model = model or "llama-3.2-1b"
    try:
        import torch  # noqa: F401
    except ImportError:
        raise UsageError("calibrate needs PyTorch: pip install 'tokenomy[torch]'") from None
    from tokenomy.answers import inputs
    from tokenomy.validation import measure

    if device not in (None, "cpu", "cuda"):
        raise UsageError("--device: cpu or cuda")
    m, pts, cfg = measure.run(measure.Setup(model, layers, divisor, vocab, tuple(inputs.numbers("batch", batch)),
                                            tuple(inputs.numbers("context", context)), steps, matmul, copy_mb * 1e6,
                                            device))
    rows = [{"batch": p.batch, "context": p.context, "measured_s": p.measured_s, "roofline_s": p.roofline_s,
             "calibrated_s": p.calibrated_s, "error": p.error, "roofline_error": p.roofline_error,
             "bound": p.bound} for p in pts]
    machine = {"device": m.device, "dtype": m.dtype, "threads": m.threads, "matmul_flops_per_s": m.flops_per_s,
               "copy_bytes_per_s": m.bytes_per_s}
    if as_json:
        emit({"machine": machine, "model": {k: cfg[k] for k in ("hidden_size", "num_hidden_layers",
                                                                 "num_attention_heads", "num_key_value_heads",
                                                                 "intermediate_size", "vocab_size")},
              "points": rows}, as_json=True, as_csv=False)
        return
    emit(rows, as_json=False, as_csv=as_csv, title=f"decode step on {m.device} ({m.dtype}, {m.threads} threads)",
         columns=("batch", "context", "measured_s", "roofline_s", "calibrated_s", "error", "roofline_error",
                  "bound"),
         notes=[f"machine: {m.flops_per_s / 1e9:.1f} GFLOP/s matmul, {m.bytes_per_s / 1e9:.2f} GB/s copy; "
                f"model: {model} scaled to {layers} layers, hidden {cfg['hidden_size']}; calibrated = "
                "overhead + weight and KV streaming efficiencies fitted on the other points (held out)."])


def _calibrate_from(path: Path, hold_out: int, out: str | None, plot: str | None, setup: dict, as_json: bool,
                    as_csv: bool) -> None:
    """calibrate --from: the answer's errors name its argument ``measured``, the CLI's --from."""
    from tokenomy.answers.fidelity import calibrate

    _check_plot(plot)
    try:
        res = calibrate(str(path), setup=setup, hold_out=hold_out, out=out)
    except ValueError as e:
        field, sep, rest = str(e).partition(":")
        if sep and field == "measured":
            raise UsageError(f"--from:{rest}") from None
        raise
    if plot:
        _write_plot(plot, res.rows(), ("before", "after"), f"{res.title}<br>before (catalog terms) and after "
                    "calibration")
    _show(res, as_json, as_csv)
    if out and not as_json and not as_csv:
        typer.echo(f"terms: {out} (use: --efficiency {out})")
