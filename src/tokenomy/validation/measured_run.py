"""One measured point of a user's benchmark file, in SI, whatever tool wrote it (ingest_vllm, ingest_aiperf,
ingest_guidellm read their tools' files into these; against.py turns them into validation cases).

A point is one benchmark run at one load: the protocol the tool ran (clients, request rate, prompt count, mean
lengths) and the figures it reported (means over requests, as each tool defines them):
    ttft_s      time to first token
    tpot_s      time per output token after the first, per request: (latency − TTFT)/(output tokens − 1)
                (vLLM's TPOT; AIPerf's and GenAI-Perf's "inter token latency"; GuideLLM's inter_token_latency_ms)
    itl_s       vLLM's ITL: the mean over every gap between streamed tokens (weights long requests more)
    output_tokens_per_s   output tokens per second over the run, all chips together
Every reader reports a bad or missing value as a ValueError naming the argument (``field``), the file and the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

METRICS = ("ttft_s", "tpot_s", "itl_s", "output_tokens_per_s")


@dataclass(frozen=True)
class MeasuredRun:
    tool: str  # the protocol name (validation.schema.PROTOCOLS): vllm-bench, aiperf, guidellm
    tool_version: str  # "" where the file does not say
    label: str  # where in the file: "run 2", "benchmark 3 (concurrent@16)"
    model_id: str | None  # the served model's name as the file gives it (an HF id, usually)
    tokenizer: str | None
    concurrency: int | None  # clients / max in-flight requests; None: not limited by the tool
    request_rate: float | None  # requests/s issued; None: all at once (rate inf) or closed loop
    num_prompts: int | None  # requests in the run
    isl: float  # mean input tokens per request
    osl: float  # mean output tokens per request
    ttft_s: float | None = None
    tpot_s: float | None = None
    itl_s: float | None = None
    output_tokens_per_s: float | None = None
    engine_hint: str | None = None  # the serving engine where the file names it (vllm, sglang, trtllm)

    def measured(self) -> dict[str, float]:
        """The metrics this run reported, by name (METRICS order)."""
        return {m: getattr(self, m) for m in METRICS if getattr(self, m) is not None}


class Reader:
    """Checks on the values of one file, each error one line naming the argument, the file and the key."""

    def __init__(self, field: str, name: str):
        self.field, self.name = field, name

    def fail(self, what: str) -> ValueError:
        return ValueError(f"{self.field}: {self.name}: {what}")

    def number(self, value, key: str, *, scale: float = 1.0, required: bool = False) -> float | None:
        """A positive finite number times ``scale`` (ms -> s: 1e-3); None where absent and not required."""
        if value is None or value == "":
            if required:
                raise self.fail(f"missing {key}")
            return None
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise self.fail(f"{key} is {str(value)[:40]!r}, not a number") from None
        if not math.isfinite(v) or v <= 0:
            if required:
                raise self.fail(f"{key} must be a positive number, got {str(value)[:40]}")
            return None  # a metric the run could not measure (0 or NaN): left out, not guessed
        return v * scale

    def count(self, value, key: str) -> int | None:
        """A positive whole number (clients, prompts), or None where absent."""
        v = self.number(value, key)
        if v is None:
            return None
        if v != int(v):
            raise self.fail(f"{key} must be a whole number, got {value!r}")
        return int(v)

    def rate(self, value, key: str) -> float | None:
        """A request rate: None for "inf" (every request at once), else a positive number."""
        if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
            return None
        v = self.number(value, key)
        return None if v is None or math.isinf(v) else v

    def mapping(self, data, key: str) -> dict:
        if not isinstance(data, dict):
            raise self.fail(f"{key} must be a JSON object")
        return data
