"""tokenomy serve: a workload on a deployment (TTFT, TPOT, throughput, $/Mtok); a thin layer over answers.workloads."""

from __future__ import annotations

import typer

from tokenomy.cli.app import UsageError, app, guarded
from tokenomy.cli.options import (ATTN_TP, CACHE_HIT, CONCURRENCY, CSV, DP, EFFICIENCY, EMIT, EP, EXPLAIN, ISL, JSON,
                                  KV_BATCH, MODEL, OSL, PLAN_ENGINE, PP, RATE, REDUNDANT_EXPERTS, SERVE_KV_DTYPE, TP,
                                  TPOT_SLO, TTFT_SLO, USD_PER_KWH, FACILITY, WEIGHT_DTYPE, SET, layout_flags, number,
                                  what_if)
from tokenomy.cli.render import show_result


@app.command("serve")
@guarded
def serve_cmd(model: str = MODEL,
              hardware: str = typer.Option(..., "--hardware", help="Chip or system name (tokenomy hardware)."),
              set_: str = SET,
              chips: int = number("chips", None),
              concurrency: str = CONCURRENCY,
              rate: str = RATE,
              isl: int = ISL,
              osl: int = OSL,
              isl_dist: str = typer.Option(None, "--isl-dist", help="fixed:N | uniform:a:b | lognormal:mu:sigma."),
              osl_dist: str = typer.Option(None, "--osl-dist", help="fixed:N | uniform:a:b | lognormal:mu:sigma."),
              trace: str = typer.Option(None, "--trace", help="A recorded trace: requests as CSV arrival_s, "
                                        "input_tokens, output_tokens; with --workload, sessions as tokenomy CSV/JSONL "
                                        "(session_id, parent_id, timestamp_s, new_input_tokens, output_tokens, "
                                        "fork_tokens), AIPerf mooncake_trace or Mooncake FAST'25 JSONL "
                                        "(docs/serving.md, Trace formats)."),
              cache_hit: float = CACHE_HIT,
              engine: str = PLAN_ENGINE,
              emit: str = EMIT,
              max_num_tokens: int = number("max_num_tokens", None),
              max_batch: int = number("max_batch", None),
              batch_wait_iters: int = number("batch_wait_iters", None),
              batch_wait_tokens_ratio: float = number("batch_wait_tokens_ratio", None),
              ttft_slo: float = TTFT_SLO,
              tpot_slo: float = TPOT_SLO,
              method: str = typer.Option("analytic", "--method", help="analytic | simulate (either mode)."),
              arrivals: str = typer.Option("staggered", "--arrivals", help="Closed loop: together | staggered."),
              requests: int = number("requests", None),
              seed: int = number("seed", 0),
              protocol: str = typer.Option("steady", "--protocol", help="The benchmark tool whose run to reproduce: "
                                           "steady (the steady state) | vllm-bench | sglang-bench | aiperf | "
                                           "guidellm | inferencex | trtllm-bench | mlperf-server | mlperf-offline | llmperf."),
              mode: str = typer.Option("agg", "--mode", help="agg | disagg (prefill and decode pools)."),
              workload: str = typer.Option("steady", "--workload", help="steady (requests of --isl/--osl) | "
                                           "multiturn | agentic (sessions: --concurrency = concurrent sessions, "
                                           "--rate = sessions/s; KV tiers and hit rates)."),
              turns: int = number("turns", None),
              think_s: str = typer.Option(None, "--think-s", help="Sessions: mean think time between turns, s "
                                          "(a list sweeps: 2,10,60)."),
              kv_tiering: str = typer.Option(None, "--kv-tiering", help="Sessions: the tiered KV cache "
                                             "(catalog/kv_tiering: lmcache, ...); default HBM only."),
              dram_bytes: str = typer.Option(None, "--dram-bytes", help="Sessions: host DRAM per node for the KV "
                                             "tier, bytes (default half the host's; a list sweeps)."),
              nvme_bytes: float = typer.Option(None, "--nvme-bytes", help="Sessions: local NVMe per node for the "
                                               "KV tier, bytes (default all of it; 0: none)."),
              routing: str = typer.Option(None, "--routing", help="Sessions: compare routing across replicas "
                                          "(round-robin | session-sticky | prefix-aware | kv-router; dp >= 2): "
                                          "hit rate, imbalance."),
              prefill_chips: int = typer.Option(None, "--prefill-chips", help="disagg: chips of the prefill pool."),
              decode_chips: int = typer.Option(None, "--decode-chips", help="disagg: chips of the decode pool."),
              prefill_tp: int = typer.Option(None, "--prefill-tp", help="disagg: prefill pool TP (default: best)."),
              prefill_ep: int = typer.Option(None, "--prefill-ep", help="disagg: prefill pool EP."),
              prefill_pp: int = typer.Option(None, "--prefill-pp", help="disagg: prefill pool PP."),
              prefill_dp: int = typer.Option(None, "--prefill-dp", help="disagg: prefill pool DP."),
              prefill_redundant_experts: int = typer.Option(None, "--prefill-redundant-experts",
                                                            help="disagg: prefill pool --redundant-experts."),
              prefill_attn_tp: bool = typer.Option(False, "--prefill-attn-tp", help="disagg: prefill pool --attn-tp."),
              prefill_kv_batch: bool = typer.Option(False, "--prefill-kv-batch",
                                                    help="disagg: prefill pool --kv-batch."),
              decode_tp: int = typer.Option(None, "--decode-tp", help="disagg: decode pool TP (default: best)."),
              decode_ep: int = typer.Option(None, "--decode-ep", help="disagg: decode pool EP."),
              decode_pp: int = typer.Option(None, "--decode-pp", help="disagg: decode pool PP."),
              decode_dp: int = typer.Option(None, "--decode-dp", help="disagg: decode pool DP."),
              decode_redundant_experts: int = typer.Option(None, "--decode-redundant-experts",
                                                           help="disagg: decode pool --redundant-experts."),
              decode_attn_tp: bool = typer.Option(False, "--decode-attn-tp", help="disagg: decode pool --attn-tp."),
              decode_kv_batch: bool = typer.Option(False, "--decode-kv-batch", help="disagg: decode pool --kv-batch."),
              search: bool = typer.Option(False, "--search", help="disagg: search pool splits of --chips (the "
                                          "budget) under the SLOs: the Pareto front and the best plan."),
              top: int = typer.Option(None, "--top", help="--search: rows to show (1: the best plan)."),
              tp: int = TP, ep: int = EP, pp: int = PP, dp: int = DP, redundant_experts: int = REDUNDANT_EXPERTS,
              attn_tp: bool = ATTN_TP, kv_batch: bool = KV_BATCH, weight_dtype: str = WEIGHT_DTYPE,
              kv_dtype: str = SERVE_KV_DTYPE,
              efficiency: str = EFFICIENCY, usd_per_kwh: float = USD_PER_KWH, facility: str = FACILITY,
              as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """Serve a workload: TTFT, TPOT, throughput and $/Mtok per workload point — aggregated continuous batching, or
    disaggregated prefill and decode pools (KV handed over the link between them).

    Example: tokenomy serve --model llama-3.1-70b --hardware hgx-h100-8 --concurrency 64 --isl 1024 --osl 1024

    Disaggregated: tokenomy serve --model deepseek-v3 --hardware gb200-nvl72 --mode disagg --prefill-chips 72
    --decode-chips 144 --concurrency 256 --isl 4096 --osl 1024 (--method simulate: p50/p99 from the requests)

    As a benchmark measures it: tokenomy serve --model llama-3.1-8b --hardware h100-sxm --tp 1 --engine trtllm
    --concurrency 8 --isl 1024 --osl 128 --protocol trtllm-bench (--requests: the tool's prompt count)

    Agentic sessions with KV tiers (hit rate, TTFT, $/Mtok split into input-miss, input-hit, output):
    tokenomy serve --model deepseek-v3 --hardware gb200-nvl72 --workload agentic --concurrency 1024,4096
    --kv-tiering lmcache (--dram-bytes 0,480e9,960e9 sweeps the DRAM tier; --method simulate: percentiles)

    Plan a split (--search: pools in powers of two within a scale-up domain or whole domains, P + D <= --chips):
    tokenomy serve --model deepseek-v3 --hardware gb200-nvl72 --mode disagg --search --chips 288 --concurrency
    256,1024 --isl 4096 --osl 1024 --ttft-slo 2 --tpot-slo 0.05 --top 1
    """
    from tokenomy.answers.requests import ServeRequest
    from tokenomy.answers.workloads import disagg_plan, serve_request

    if mode not in ("agg", "disagg"):
        raise UsageError(f"--mode: {mode!r}; allowed: agg, disagg")
    pools = {**layout_flags(prefill_tp, prefill_ep, prefill_pp, prefill_dp, prefill_redundant_experts,
                            prefill_attn_tp, prefill_kv_batch, prefix="prefill_"),
             **layout_flags(decode_tp, decode_ep, decode_pp, decode_dp, decode_redundant_experts, decode_attn_tp,
                            decode_kv_batch, prefix="decode_"), "prefill_chips": prefill_chips,
             "decode_chips": decode_chips}
    if mode == "agg" and (search or any(v is not None for v in pools.values())):
        raise UsageError("--prefill-*/--decode-*/--search: only with --mode disagg")
    # the request objects, at once: the workload, the engine, what is served and how (answers/requests.py)
    given = dict(concurrency=concurrency, rate=rate, isl=isl, osl=osl, isl_dist=isl_dist, osl_dist=osl_dist,
                 trace=trace, cache_hit=cache_hit, arrivals=arrivals, ttft_slo=ttft_slo, tpot_slo=tpot_slo,
                 engine=engine, max_num_tokens=max_num_tokens, max_batch=max_batch, batch_wait_iters=batch_wait_iters,
                 batch_wait_tokens_ratio=batch_wait_tokens_ratio, weight_dtype=weight_dtype,
                 kv_dtype=kv_dtype, efficiency=efficiency, usd_per_kwh=usd_per_kwh, facility=facility, mode=mode)
    hw = what_if(hardware, set_)
    if search:
        if emit is not None:
            raise UsageError("--emit: with --search, ask tokenomy plan --mode disagg --emit (the same search)")
        if mode != "disagg" or chips is None:
            raise UsageError("--search: needs --mode disagg and --chips (the budget to split)")
        res = disagg_plan(ServeRequest.of(model, hw, {**given, "pools": pools}), chips, top)
        return show_result(res, as_json=as_json, as_csv=as_csv, show=show)
    if mode == "disagg" and (prefill_chips is None or decode_chips is None):
        raise UsageError("--prefill-chips, --decode-chips: --mode disagg needs both pool sizes (or --search)")
    given.update(method=method, requests=requests, seed=seed, protocol=protocol, emit=emit, chips=chips,
                 pools=pools if mode == "disagg" else None,
                 **layout_flags(tp, ep, pp, dp, redundant_experts, attn_tp, kv_batch))
    sessions = dict(workload=workload, turns=turns, think_s=think_s, kv_tiering=kv_tiering, dram_bytes=dram_bytes,
                    nvme_bytes=nvme_bytes, routing=routing)
    if workload != "steady" or any(v is not None for k, v in sessions.items() if k != "workload"):
        from tokenomy.answers.workloads import serve  # session workloads: answers/session_serve.py

        return show_result(serve(model, hw, **given, **sessions), as_json=as_json, as_csv=as_csv, show=show)
    show_result(serve_request(ServeRequest.of(model, hw, given)), as_json=as_json, as_csv=as_csv, show=show)
