"""`vllm bench serve --save-result` files: one JSON object per run (``--append-result`` adds one per line).

Format read from vLLM's source (vllm-project/vllm, vllm/benchmarks/serve.py at commit 009e6d4a, the
``result_json`` written by ``main_async``): the set-up keys ``backend``, ``model_id``, ``tokenizer_id``,
``num_prompts``, ``request_rate`` (a number, or the string "inf"), ``burstiness``, ``max_concurrency`` (null when
unlimited), then the benchmark's ``completed``, ``total_input_tokens``, ``total_output_tokens``,
``output_throughput`` (tok/s) and ``mean_/median_/std_/pNN_`` ``ttft_ms``, ``tpot_ms``, ``itl_ms``, ``e2el_ms``.
Per-request lists (``input_lens``, ``ttfts``, ...) are kept only with ``--save-detailed``, so the mean lengths are
total tokens / completed requests.
"""

from __future__ import annotations

import json

from tokenomy.validation.measured_run import MeasuredRun, Reader

# where the format is defined
FORMAT_URL = "https://github.com/vllm-project/vllm/blob/main/vllm/benchmarks/serve.py"
TOOL = "vllm-bench"
SIGNATURE = ("completed", "total_input_tokens", "total_output_tokens", "output_throughput")  # what detection keys on
ENGINES = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "trtllm", "trt-llm": "trtllm"}  # --backend names


def is_vllm(obj) -> bool:
    return isinstance(obj, dict) and all(k in obj for k in SIGNATURE)


def documents(text: str, r: Reader) -> list[dict]:
    """The JSON objects of a file: one, or one per line (``--append-result``)."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise r.fail(f"line {i} is not JSON ({e.msg})") from None
    return out


def run_of(d: dict, label: str, r: Reader) -> MeasuredRun:
    """One result object as a measured run (times ms -> s)."""
    r.mapping(d, label)
    missing = [k for k in SIGNATURE if k not in d]
    if missing:
        raise r.fail(f"{label}: not a vllm bench serve result: missing {', '.join(missing)}")
    done = r.number(d["completed"], f"{label} completed", required=True)
    ms = 1e-3
    return MeasuredRun(
        tool=TOOL, tool_version=str(d.get("vllm_version", "")), label=label, model_id=d.get("model_id"),
        tokenizer=d.get("tokenizer_id"), concurrency=r.count(d.get("max_concurrency"), f"{label} max_concurrency"),
        request_rate=r.rate(d.get("request_rate", "inf"), f"{label} request_rate"),
        num_prompts=r.count(d.get("num_prompts"), f"{label} num_prompts"),
        isl=r.number(d["total_input_tokens"], f"{label} total_input_tokens", required=True) / done,
        osl=r.number(d["total_output_tokens"], f"{label} total_output_tokens", required=True) / done,
        ttft_s=r.number(d.get("mean_ttft_ms"), f"{label} mean_ttft_ms", scale=ms),
        tpot_s=r.number(d.get("mean_tpot_ms"), f"{label} mean_tpot_ms", scale=ms),
        itl_s=r.number(d.get("mean_itl_ms"), f"{label} mean_itl_ms", scale=ms),
        output_tokens_per_s=r.number(d["output_throughput"], f"{label} output_throughput"),
        engine_hint=ENGINES.get(str(d.get("backend", "")).lower()))


def read(text: str, r: Reader) -> list[MeasuredRun]:
    docs = documents(text, r)
    return [run_of(d, f"run {i + 1}" if len(docs) > 1 else "run", r) for i, d in enumerate(docs)]
