"""tokenomy min-chips: the fewest chips per use case (chat, rag, code-completion, agent, batch-summarisation);
a thin layer over answers.sizing.min_chips."""

from __future__ import annotations

import typer

from tokenomy.cli.app import app, guarded
from tokenomy.cli.options import (CACHE_HIT, CSV, EFFICIENCY, ENGINE, EXPLAIN, JSON, MODEL, SERVE_KV_DTYPE, SET,
                                  WEIGHT_DTYPE, number, what_if)
from tokenomy.cli.render import show_result


@app.command("min-chips")
@guarded
def min_chips_cmd(model: str = MODEL,
                  hardware: str = typer.Option(..., "--hardware", help="Chip or system name (tokenomy hardware)."),
                  set_: str = SET,
                  use_case: str = typer.Option(None, "--use-case", help="chat, rag, code-completion, agent, "
                                               "batch-summarisation (a comma list; default: all)."),
                  concurrency: float = number("concurrency", 16),
                  max_chips: int = number("max_chips", 256),
                  cache_hit: float = CACHE_HIT, engine: str = ENGINE, weight_dtype: str = WEIGHT_DTYPE,
                  kv_dtype: str = SERVE_KV_DTYPE, efficiency: str = EFFICIENCY,
                  as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """The fewest chips (powers of two) that hold the model and its users' KV and meet each use case's TTFT and
    TPOT SLOs (MLPerf's constraints, on the steady state's means); lengths illustrative, SLO sources in --explain.

    Example: tokenomy min-chips --model llama-3.1-70b --hardware h100-sxm --concurrency 16
    """
    from tokenomy.answers.sizing import min_chips

    res = min_chips(model, what_if(hardware, set_), use_case=use_case, concurrency=concurrency, max_chips=max_chips,
                    cache_hit=cache_hit, engine=engine, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                    efficiency=efficiency)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show)
