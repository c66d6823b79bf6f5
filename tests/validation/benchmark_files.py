"""Benchmark result files as each tool writes them, for the tests of `validate --against` / `calibrate --from`.

Each writer lays out a file the way its tool's source does (not a sample taken from a tool's package):
- vLLM `vllm bench serve --save-result` (vllm-project/vllm, vllm/benchmarks/serve.py at commit 009e6d4a:
  ``result_json`` = date, endpoint_type, backend, label, model_id, tokenizer_id, num_prompts, request_rate ("inf"
  when unlimited), burstiness, max_concurrency, then the benchmark dict: duration, completed, failed, token totals,
  throughputs, max_output_tokens_per_s, max_concurrent_requests, and mean/median/std/p99 of ttft, tpot, itl, e2el
  in ms); ``--append-result`` writes one object per line.
- AIPerf 0.8.0 (ai-dynamo/aiperf, pyproject at commit 01b09728; export schema 1.0,
  src/aiperf/common/models/export_models.py): ``profile_export_aiperf.json`` with schema_version, aiperf_version,
  input_config (endpoint.model_names, loadgen.concurrency / request_rate / request_count,
  input.prompt.input_tokens.mean, output_tokens.mean, tokenizer.name) and {unit, avg, p50, p99, min, max, std} per
  metric tag; ``profile_export_aiperf.csv`` (exporters/metrics_csv_exporter.py): a "Metric,avg,min,max,p1,..."
  section, a blank line, a "Metric,Value" section, metric names "Header (unit)".
- GenAI-Perf (triton-inference-server/perf_analyzer, genai-perf/genai_perf/export_data/json_exporter.py): the
  same metric objects and the command's arguments flat under input_config.
- GuideLLM (vllm-project/guidellm at commit 03820eba, src/guidellm/benchmark/schemas/generative/report.py,
  benchmark.py, metrics.py; scheduler/strategies.py): {metadata, args, benchmarks: [{type_, config: {strategy},
  metrics: {<name>: {successful: {mean, median, ...}, errored, incomplete, total}}}]}.
A point is a dict: concurrency or rate, isl, osl, ttft_s, tpot_s, itl_s, output_tokens_per_s (all chips), n.
"""

from __future__ import annotations

import csv
import io
import json

MODEL_ID = "meta-llama/Llama-3.1-8B-Instruct"


def _ms(seconds: float) -> float:
    return 1000.0 * seconds


def vllm_result(p: dict) -> dict:
    n = p.get("n", 10 * (p.get("concurrency") or 8))
    dur = n * p["osl"] / p["output_tokens_per_s"]
    out = {"date": "20261201-120000", "endpoint_type": "vllm", "backend": "vllm", "label": None,
           "model_id": MODEL_ID, "tokenizer_id": MODEL_ID, "num_prompts": n,
           "request_rate": p.get("rate") or "inf", "burstiness": 1.0, "max_concurrency": p.get("concurrency"),
           "duration": dur, "completed": n, "failed": 0, "total_input_tokens": n * p["isl"],
           "total_output_tokens": n * p["osl"], "request_throughput": n / dur, "request_goodput": None,
           "output_throughput": p["output_tokens_per_s"],
           "total_token_throughput": n * (p["isl"] + p["osl"]) / dur,
           "max_output_tokens_per_s": 1.2 * p["output_tokens_per_s"],
           "max_concurrent_requests": p.get("concurrency") or n, "rtfx": 0.0}
    for m in ("ttft", "tpot", "itl"):
        v = _ms(p[f"{m}_s"])
        out |= {f"mean_{m}_ms": v, f"median_{m}_ms": 0.98 * v, f"std_{m}_ms": 0.1 * v, f"p99_{m}_ms": 1.5 * v}
    e2el = _ms(p["ttft_s"] + (p["osl"] - 1) * p["tpot_s"])
    out |= {"mean_e2el_ms": e2el, "median_e2el_ms": e2el, "std_e2el_ms": 0.1 * e2el, "p99_e2el_ms": 1.2 * e2el}
    return out


def vllm_file(points: list[dict]) -> str:
    """One result per line, as --append-result leaves a file after several runs."""
    return "\n".join(json.dumps(vllm_result(p)) for p in points)


def _stat(unit: str, v: float) -> dict:
    return {"unit": unit, "avg": v, "p50": 0.98 * v, "p90": 1.2 * v, "p99": 1.5 * v, "min": 0.5 * v,
            "max": 2.0 * v, "std": 0.1 * v}


def aiperf_json(p: dict) -> dict:
    load = {"concurrency": p["concurrency"]} if p.get("concurrency") else {"request_rate": p["rate"]}
    return {"schema_version": "1.0", "aiperf_version": "0.8.0", "benchmark_id": "3f6c1d2e",
            "input_config": {"endpoint": {"model_names": [MODEL_ID], "type": "chat", "streaming": True},
                             "loadgen": {**load, "request_count": p.get("n", 100)},
                             "input": {"prompt": {"input_tokens": {"mean": p["isl"]},
                                                  "output_tokens": {"mean": p["osl"]}}},
                             "tokenizer": {"name": MODEL_ID}},
            "request_throughput": _stat("requests/sec", p["output_tokens_per_s"] / p["osl"]),
            "time_to_first_token": _stat("ms", _ms(p["ttft_s"])),
            "inter_token_latency": _stat("ms", _ms(p["tpot_s"])),
            "output_token_throughput": {"unit": "tokens/sec", "avg": p["output_tokens_per_s"]},
            "input_sequence_length": _stat("tokens", p["isl"]), "output_sequence_length": _stat("tokens", p["osl"]),
            "request_count": {"unit": "requests", "avg": p.get("n", 100)}, "was_cancelled": False}


def genai_perf_json(p: dict) -> dict:
    d = aiperf_json(p)
    for k in ("schema_version", "aiperf_version", "benchmark_id", "was_cancelled"):
        d.pop(k)
    d["input_config"] = {"model": [MODEL_ID], "concurrency": p.get("concurrency"), "request_rate": p.get("rate"),
                         "synthetic_input_tokens_mean": p["isl"], "output_tokens_mean": p["osl"],
                         "request_count": p.get("n", 100), "tokenizer": MODEL_ID, "endpoint_type": "chat",
                         "streaming": True}
    return d


def aiperf_csv(p: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    stats = ("avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std")
    w.writerow(["Metric", *stats])
    for name, unit, v in (("Input Sequence Length", "tokens", p["isl"]),
                          ("Inter Token Latency", "ms", _ms(p["tpot_s"])),
                          ("Output Sequence Length", "tokens", p["osl"]),
                          ("Time to First Token", "ms", _ms(p["ttft_s"]))):
        w.writerow([f"{name} ({unit})", f"{v:.2f}"] + [f"{v:.2f}"] * (len(stats) - 1))
    w.writerow([])
    w.writerow(["Metric", "Value"])
    w.writerow(["Output Token Throughput (tokens/sec)", f"{p['output_tokens_per_s']:.2f}"])
    w.writerow(["Request Count", str(p.get("n", 100))])
    return buf.getvalue()


def _summary(v: float) -> dict:
    d = {"mean": v, "median": v, "mode": v, "variance": 0.0, "std_dev": 0.0, "min": v, "max": v, "count": 100,
         "total_sum": 100 * v, "percentiles": {"p50": v, "p90": v, "p99": v}}
    return {"successful": d, "errored": None, "incomplete": None, "total": d}


def guidellm_benchmark(p: dict) -> dict:
    strategy = ({"type_": "concurrent", "streams": p["concurrency"]} if p.get("concurrency")
                else {"type_": "poisson", "rate": p["rate"]})
    return {"type_": "generative_benchmark",
            "config": {"id_": "b0", "run_id": "r0", "run_index": 0, "strategy": strategy, "constraints": {},
                       "profile": {}, "requests": {}, "backend": {}, "environment": {}},
            "metrics": {"request_totals": {"successful": p.get("n", 100), "incomplete": 0, "errored": 0,
                                           "total": p.get("n", 100)},
                        "requests_per_second": _summary(p["output_tokens_per_s"] / p["osl"]),
                        "prompt_token_count": _summary(p["isl"]), "output_token_count": _summary(p["osl"]),
                        "time_to_first_token_ms": _summary(_ms(p["ttft_s"])),
                        "time_per_output_token_ms": _summary(_ms(p["ttft_s"] / p["osl"] + p["tpot_s"])),
                        "inter_token_latency_ms": _summary(_ms(p["tpot_s"])),
                        "output_tokens_per_second": _summary(p["output_tokens_per_s"])}}


def guidellm_report(points: list[dict]) -> dict:
    return {"metadata": {"version": 2, "guidellm_version": "0.7.2"},
            "args": {"target": "http://localhost:8000", "model": MODEL_ID, "processor": MODEL_ID,
                     "profile": "concurrent", "data": ["prompt_tokens=1024,output_tokens=256"]},
            "benchmarks": [guidellm_benchmark(p) for p in points]}
