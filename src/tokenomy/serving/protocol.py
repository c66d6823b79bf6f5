"""A benchmark protocol as a request object: how a tool issues requests and reduces them to the figures it prints.

    load      arrivals: "steady" (no run: the steady state users plan with), "burst" (request rate inf: every
              prompt due at t = 0, at most C in flight, a client's next sent as its last completes), "poisson"
              (open loop at λ requests/s for at least min_duration_s), "offline" (every prompt queued at t = 0, no
              client limit: the engine admits what its batch cap and KV allow)
    prompts   the timed prompt count: prompts_per_client·C where the tool's runs set it so (InferenceX 10·C), else
              the tool's default ``prompts`` (a case's own count overrides); warm-up requests run before the timer
    lengths   each request's input and output drawn as the tool's code draws them from the nominal L and the range
              ratio r (``lengths``): vllm [floor(L(1 − r)), ceil(L(1 + r))], sglang [max(int(L·r), 1), L] (output
              [int(L·r), L]), inferencex [int(L·r), L], fixed L — integers uniform, both ends included
    metrics   TTFT and TPOT reduced over the timed requests by the tool's statistic (mean; median; p50-index:
              sorted[int(n/2)], trtllm-bench's; p99), TPOT per request (latency − TTFT)/(out − 1) ("decode") or
              latency/out ("e2e", GuideLLM's, first token included); output throughput = total output tokens /
              (last response − first request), ramp-up and drain included
Built from catalog/protocols/<name>.toml (``protocol_of``); each file cites the tool's source at a commit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tokenomy.serving.workload import Lengths

STATISTICS = ("mean", "median", "p50-index", "p99")


@dataclass(frozen=True)
class Protocol:
    name: str
    tool: str
    arrivals: str  # "steady" | "burst" | "poisson" | "offline"
    prompts: int = 0
    prompts_per_client: int = 0
    min_duration_s: float = 0.0
    warmup_requests: int = 0
    warmup_per_client: int = 0
    burstiness: float = 1.0
    draw: str = "fixed"
    range_ratio: float = 0.0
    ignore_eos: bool = True
    ttft_statistic: str = "mean"
    tpot_statistic: str = "mean"
    tpot_definition: str = "decode"
    cite: str = ""

    @property
    def steady(self) -> bool:
        return self.arrivals == "steady"

    def prompt_count(self, concurrency=None, rate=None, given: int | None = None) -> int:
        """Timed prompts of a run (module docstring): ``given`` (a case's own), prompts_per_client·C, or the tool's
        default; an open loop with a minimum duration runs at least R·min_duration_s."""
        if given:
            return int(given)
        n = self.prompts_per_client * int(concurrency) if self.prompts_per_client and concurrency else self.prompts
        if self.arrivals == "poisson" and rate and self.min_duration_s:
            n = max(n, math.ceil(float(rate) * self.min_duration_s))
        return max(int(n), int(concurrency or 1), 1)

    def lengths(self, nominal: int, output: bool) -> Lengths:
        """The tool's length distribution around ``nominal`` tokens (module docstring); an output drawn at 0
        tokens (sglang at r < 1/O) runs as 1."""
        L, r = int(nominal), float(self.range_ratio)
        if self.draw == "fixed" or r == 0.0 and self.draw in ("vllm", "inferencex"):
            return Lengths("fixed", float(L))
        if self.draw == "vllm":
            lo, hi = math.floor(L * (1.0 - r)), math.ceil(L * (1.0 + r))
        elif self.draw == "sglang":
            lo, hi = (int(L * r) if output else max(int(L * r), 1)), L
        else:  # inferencex
            lo, hi = int(L * r), L
        return Lengths("uniform", float(max(lo, 1)), float(max(hi, lo, 1)))

    def reduce(self, values, statistic: str) -> float:
        """One figure from per-request values as the tool reduces them (NaN entries skipped)."""
        v = np.asarray(values, float)
        v = v[np.isfinite(v)]
        if v.size == 0:
            return math.nan
        if statistic == "mean":
            return float(np.mean(v))
        if statistic == "median":
            return float(np.median(v))
        if statistic == "p50-index":
            return float(np.sort(v)[int(0.5 * v.size)])
        return float(np.percentile(v, 99))

    def label(self) -> str:
        if self.steady:
            return "steady state"
        return (f"{self.name} ({self.tool}): {self.arrivals} arrivals, {self.draw} lengths r={self.range_ratio:g}, "
                f"TTFT {self.ttft_statistic}, TPOT {self.tpot_statistic} of {self.tpot_definition}")


def protocol_of(f) -> Protocol:
    """The Protocol of a catalog protocol file (catalog.schema.ProtocolFile)."""
    ld, ln, m = f.load, f.lengths, f.metrics
    cite = f"{f.repository} {', '.join(f.paths)} @ {f.commit[:12]}" if f.repository else "serving/steady.py"
    return Protocol(f.name, f.tool, ld.arrivals, ld.prompts, ld.prompts_per_client, ld.min_duration_s,
                    ld.warmup_requests, ld.warmup_per_client, ld.burstiness, ln.draw, ln.range_ratio, ln.ignore_eos,
                    m.ttft, m.tpot, m.tpot_definition, cite)
