"""Fidelity commands: `tokenomy validate` (published measurements vs the model), `tokenomy calibrate` (measure
this machine with PyTorch and time real decode steps). `tokenomy estimate` is now an alias of `tokenomy decode`,
whose answer is the calibrated estimate with the roofline bound beside it."""

from __future__ import annotations

from pathlib import Path

import typer

from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.options import CSV, JSON
from tokenomy.cli.render import emit


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
                 as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """Predict every published measurement in the validation catalog and report the error.

    Errors are held-out (cases the calibration never saw) unless --cases shows the split per row; the
    roofline bound is shown beside the calibrated estimate. Example: tokenomy validate --by metric,bound
    """
    from tokenomy.answers.fidelity import validate

    res = validate(source=source or None, by=tuple(k.strip() for k in by.split(",") if k.strip()), cases=cases,
                   refit=refit, loso=loso, write=write)
    if as_json or as_csv or cases:
        emit(res.payload(), as_json=as_json, as_csv=as_csv, title=res.title, columns=res.columns)
        return
    emit(res.rows(), as_json=False, as_csv=False, title=res.title, columns=res.columns, notes=res.notes)


@app.command("calibrate")
@guarded
def calibrate_cmd(model: str = typer.Option("llama-3.2-1b", "--model", help="Dense catalog model to scale down."),
                  layers: int = typer.Option(2, "--layers", min=1, help="Decoder layers to build."),
                  divisor: int = typer.Option(4, "--divisor", min=1, help="Divide heads and widths by this."),
                  vocab: int = typer.Option(8192, "--vocab", min=16, help="Vocabulary of the scaled model."),
                  batch: str = typer.Option("1,4,16", "--batch", help="Decode batch sizes."),
                  context: str = typer.Option("128,512", "--context", help="Cached positions before the step."),
                  steps: int = typer.Option(5, "--steps", min=1, help="Timed decode steps per point (fastest kept)."),
                  matmul: int = typer.Option(1024, "--matmul-size", min=64, help="Square GEMM size for FLOP/s."),
                  copy_mb: float = typer.Option(256.0, "--copy-mb", min=1.0, help="Buffer size for bandwidth."),
                  device: str = typer.Option(None, "--device", help="cpu or cuda (default: cuda when present)."),
                  as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """Measure this machine (matmul FLOP/s, memory bandwidth) with PyTorch, time real decode steps of a small
    transformer built from a catalog config, and print measured vs predicted step time.

    Example: tokenomy calibrate --model llama-3.2-1b --layers 2 --batch 1,8 --context 256
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        raise UsageError("calibrate needs PyTorch: pip install 'tokenomy[torch]'") from None
    from tokenomy.validation import measure

    if device not in (None, "cpu", "cuda"):
        raise UsageError("--device: cpu or cuda")
    m, pts, cfg = measure.run(model, layers, divisor, vocab, tuple(int_list("batch", batch)),
                              tuple(int_list("context", context)), steps, matmul, copy_mb * 1e6, device)
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
