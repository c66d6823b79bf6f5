"""`tokenomy plan`: the layout search (answers/layouts.py), as a thin typer layer."""

from __future__ import annotations

import typer

from tokenomy.cli.app import app, guarded, int_list
from tokenomy.cli.render import show_result
from tokenomy.cli.options import CSV, EFFICIENCY, EXPLAIN, HOP_LATENCY, JSON, KV_DTYPE, MODEL, WEIGHT_DTYPE


@app.command("plan")
@guarded
def plan_cmd(model: str = MODEL,
             hardware: str = typer.Option(..., "--hardware", help="Chip or system (its scale-up domain and links)."),
             chips: int = typer.Option(None, "--chips", help="Chip budget (default: the system's chips)."),
             context: int = typer.Option(8192, "--context", help="Context length in tokens (prompt for TTFT)."),
             min_tokens_per_user: float = typer.Option(0.0, "--min-tokens-per-user",
                                                       help="Minimum decode tokens/s per user."),
             max_ttft: float = typer.Option(None, "--max-ttft", help="Maximum time to first token, seconds."),
             batch: str = typer.Option(None, "--batch", help="Batches to try (default 1..65536, 1.5x steps)."),
             weight_dtype: str = WEIGHT_DTYPE, kv_dtype: str = KV_DTYPE, efficiency: str = EFFICIENCY,
             hop_latency: float = HOP_LATENCY,
             torus: str = typer.Option(None, "--torus", help="TPU ICI torus shape of the domain, e.g. 4x4x4."),
             top: int = typer.Option(0, "--top", help="Show only this many front points (0: all; best kept)."),
             as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """Search every tp x ep x pp x dp layout and batch; print the Pareto front of tokens/s per chip vs per user.

    Example: tokenomy plan --model deepseek-v3 --hardware gb200-nvl72 --chips 288 --min-tokens-per-user 20

    --explain derives the best plan (most tokens/s per chip on the front) step by step.
    """
    from tokenomy.answers.layouts import plan
    from tokenomy.parallel.topology import parse_torus

    res = plan(model, hardware, chips=chips, context=context, min_tokens_per_user=min_tokens_per_user,
               max_ttft=max_ttft, batch=None if batch is None else int_list("batch", batch), weight_dtype=weight_dtype,
               kv_dtype=kv_dtype, efficiency=efficiency, hop_latency=hop_latency, torus=parse_torus(torus), top=top)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show)
