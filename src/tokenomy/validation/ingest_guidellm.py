"""GuideLLM's benchmarks report (``benchmarks.json``): one entry per benchmark (one load) of a run.

Format read from GuideLLM's source (vllm-project/guidellm at commit 03820eba): the report
(src/guidellm/benchmark/schemas/generative/report.py, ``GenerativeBenchmarksReport``: ``args``, ``benchmarks``;
newer reports add ``metadata.guidellm_version``); each benchmark (generative/benchmark.py) has ``config.strategy``
(scheduler/strategies.py: ``type_`` synchronous | concurrent with ``streams`` | throughput with optional
``max_concurrency`` | constant / poisson with ``rate``) and ``metrics`` (generative/metrics.py), each metric a
status summary whose ``successful`` distribution has a ``mean``: ``time_to_first_token_ms``,
``inter_token_latency_ms`` ((last − first token)/(output tokens − 1) per request: vLLM's TPOT; GuideLLM's
``time_per_output_token_ms`` includes the first token and is not used), ``output_tokens_per_second``,
``prompt_token_count``, ``output_token_count``.
"""

from __future__ import annotations

import json

from tokenomy.validation.measured_run import MeasuredRun, Reader

# where the format is defined
FORMAT_URL = "https://github.com/vllm-project/guidellm/blob/main/src/guidellm/benchmark/schemas/generative/report.py"
TOOL = "guidellm"


def is_guidellm(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("benchmarks"), list) and "args" in obj


def _mean(r: Reader, metrics: dict, key: str, label: str, scale: float = 1.0, required: bool = False):
    m = metrics.get(key)
    succ = m.get("successful") if isinstance(m, dict) else None
    if not isinstance(succ, dict):
        if required:
            raise r.fail(f"{label}: missing metrics.{key}.successful")
        return None
    return r.number(succ.get("mean"), f"{label} metrics.{key}.successful.mean", scale=scale, required=required)


def _load(r: Reader, strategy: dict, label: str) -> tuple[int | None, float | None]:
    """(clients, request rate) of a GuideLLM scheduling strategy."""
    kind = strategy.get("type_")
    if kind == "synchronous":
        return 1, None
    if kind == "concurrent":
        return r.count(strategy.get("streams"), f"{label} config.strategy.streams"), None
    if kind == "throughput":  # every request at once, up to max_concurrency if set
        return r.count(strategy.get("max_concurrency"), f"{label} config.strategy.max_concurrency"), None
    if kind in ("constant", "poisson"):
        rate = r.number(strategy.get("rate"), f"{label} config.strategy.rate", required=True)
        return r.count(strategy.get("max_concurrency"), f"{label} config.strategy.max_concurrency"), rate
    raise r.fail(f"{label}: config.strategy.type_ {kind!r} is not one of synchronous, concurrent, throughput, "
                 "constant, poisson")


def run_of(b: dict, i: int, args: dict, version: str, r: Reader) -> MeasuredRun:
    label = f"benchmark {i + 1}"
    r.mapping(b, label)
    metrics = r.mapping(b.get("metrics"), f"{label} metrics")
    config = r.mapping(b.get("config") or {}, f"{label} config")
    clients, rate = _load(r, r.mapping(config.get("strategy") or {}, f"{label} config.strategy"), label)
    totals = metrics.get("request_totals") or {}
    ms = 1e-3
    return MeasuredRun(
        tool=TOOL, tool_version=version, label=label, model_id=args.get("model"),
        tokenizer=args.get("processor") if isinstance(args.get("processor"), str) else None,
        concurrency=clients, request_rate=rate,
        num_prompts=r.count(totals.get("successful") if isinstance(totals, dict) else None,
                            f"{label} metrics.request_totals.successful"),
        isl=_mean(r, metrics, "prompt_token_count", label, required=True),
        osl=_mean(r, metrics, "output_token_count", label, required=True),
        ttft_s=_mean(r, metrics, "time_to_first_token_ms", label, ms),
        tpot_s=_mean(r, metrics, "inter_token_latency_ms", label, ms),
        output_tokens_per_s=_mean(r, metrics, "output_tokens_per_second", label))


def read(text: str, r: Reader) -> list[MeasuredRun]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise r.fail(f"not JSON ({e.msg}, line {e.lineno})") from None
    if not is_guidellm(obj):
        raise r.fail("not a GuideLLM report: needs 'args' and a 'benchmarks' list")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    args = obj["args"] if isinstance(obj["args"], dict) else {}
    if not obj["benchmarks"]:
        raise r.fail("benchmarks is empty")
    return [run_of(b, i, args, str(meta.get("guidellm_version", "")), r) for i, b in enumerate(obj["benchmarks"])]
