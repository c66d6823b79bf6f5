"""`tokenomy plan`: the layout search (answers/layouts.py), as a thin typer layer."""

from __future__ import annotations

import typer

from tokenomy.cli.app import app, guarded
from tokenomy.cli.render import show_result
from tokenomy.cli.options import (CACHE_HIT, CONCURRENCY, CSV, EFFICIENCY, EMIT, EXPLAIN, HOP_LATENCY, ISL, JSON,
                                  MODEL, OSL, PLAN_ENGINE, RATE, SERVE_KV_DTYPE, SET, TPOT_SLO, TTFT_SLO, USD_PER_KWH,
                                  FACILITY, WEIGHT_DTYPE, what_if)


@app.command("plan")
@guarded
def plan_cmd(model: str = MODEL,
             hardware: str = typer.Option(..., "--hardware", help="Chip or system (its scale-up domain and links)."),
             set_: str = SET,
             chips: int = typer.Option(None, "--chips", help="Chip budget (default: the system's chips)."),
             context: int = typer.Option(8192, "--context", help="Context length in tokens (prompt for TTFT)."),
             min_tokens_per_user: float = typer.Option(0.0, "--min-tokens-per-user",
                                                       help="Minimum decode tokens/s per user."),
             max_ttft: float = typer.Option(None, "--max-ttft", help="Maximum time to first token, seconds."),
             batch: str = typer.Option(None, "--batch", help="Batches to try (default 1..65536, 1.5x steps)."),
             weight_dtype: str = WEIGHT_DTYPE, kv_dtype: str = SERVE_KV_DTYPE, efficiency: str = EFFICIENCY,
             hop_latency: float = HOP_LATENCY,
             torus: str = typer.Option(None, "--torus", help="TPU ICI torus shape of the domain, e.g. 4x4x4."),
             top: int = typer.Option(0, "--top", help="Show only this many front points (0: all; best kept; with "
                                     "a workload: the N best by the stated rule, 1 = the best plan)."),
             mode: str = typer.Option("agg", "--mode", help="agg | disagg (prefill/decode pool splits; needs a "
                                      "workload)."),
             concurrency: str = CONCURRENCY,
             rate: str = RATE,
             isl: int = ISL,
             osl: int = OSL,
             ttft_slo: float = TTFT_SLO,
             tpot_slo: float = TPOT_SLO,
             engine: str = PLAN_ENGINE,
             emit: str = EMIT,
             cache_hit: float = CACHE_HIT,
             max_num_tokens: int = typer.Option(None, "--max-num-tokens", help="Token budget per step."),
             max_batch: int = typer.Option(None, "--max-batch", help="Running-sequence cap."),
             prefill_chips: int = typer.Option(None, "--prefill-chips", help="disagg: fix the prefill pool's chips."),
             decode_chips: int = typer.Option(None, "--decode-chips", help="disagg: fix the decode pool's chips."),
             objective: str = typer.Option(None, "--objective", help="What a serving plan maximises under the SLOs: "
                                           "goodput-per-usd (default, rental) | tokens-per-joule (all-in) | tco."),
             usd_per_kwh: float = USD_PER_KWH, facility: str = FACILITY,
             as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """Search every tp x ep x pp x dp layout and batch; print the Pareto front of tokens/s per chip vs per user.

    Example: tokenomy plan --model deepseek-v3 --hardware gb200-nvl72 --chips 288 --min-tokens-per-user 20

    --explain derives the best plan (most tokens/s per chip on the front) step by step.

    With a workload (--concurrency or --rate, --isl/--osl, SLOs --ttft-slo/--tpot-slo) the search serves it: each
    plan through the serving steady state, $/Mtok in and out beside tokens/s per chip and per user; best = the most
    SLO-meeting requests per dollar (the rule is in the header and the JSON); --objective tokens-per-joule ranks by
    SLO-meeting output tokens per all-in joule, --objective tco by requests per dollar of ownership. --mode disagg searches prefill/decode
    pool splits of --chips. When no plan meets the SLOs the answer says so, with the closest plan and by how much it
    misses (exit 0); bad input (rate/concurrency <= 0, --osl 0, pools that do not fit or exceed --chips) is one
    line, exit 2.

    Example: tokenomy plan --model deepseek-v3 --hardware gb200-nvl72 --chips 288 --mode disagg --concurrency 256
    --isl 4096 --osl 1024 --ttft-slo 2 --tpot-slo 0.05 --engine sglang --top 1

    --emit vllm|sglang|trtllm|dynamo prints the launch command of each pool of the chosen plan (docs/deploy.md).
    Example: tokenomy plan --model llama-3.1-70b --hardware h100-sxm --chips 8 --concurrency 64 --emit vllm
    """
    from tokenomy.answers.layouts import plan
    from tokenomy.parallel.topology import parse_torus

    res = plan(model, what_if(hardware, set_), chips=chips, context=context, min_tokens_per_user=min_tokens_per_user,
               max_ttft=max_ttft, batch=batch, weight_dtype=weight_dtype,
               kv_dtype=kv_dtype, efficiency=efficiency, hop_latency=hop_latency, torus=parse_torus(torus), top=top,
               mode=mode, concurrency=concurrency, rate=rate, isl=isl,
               osl=osl, ttft_slo=ttft_slo, tpot_slo=tpot_slo, engine=engine, cache_hit=cache_hit,
               max_num_tokens=max_num_tokens, max_batch=max_batch, prefill_chips=prefill_chips,
               decode_chips=decode_chips, objective=objective, usd_per_kwh=usd_per_kwh, facility=facility,
               emit=emit)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show)
