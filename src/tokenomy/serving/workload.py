"""A serving workload: who sends what, and when.

    closed loop  U clients, each sending its next request when the last one completes (zero think time);
                 arrivals "together" (all C at t = 0, as benchmark clients start) or "staggered" (spread over one
                 request lifetime, the steady state)
    open loop    Poisson arrivals at λ requests/s (exponential gaps, mean 1/λ)
    lengths      fixed:N, uniform:a:b (whole tokens, both ends included), lognormal:mu:sigma (ln tokens ~ N(mu,
                 sigma^2), mean exp(mu + sigma^2/2), rounded, at least 1), or a trace CSV (arrival_s, input_tokens,
                 output_tokens; a header row is allowed)
    cache hits   a fraction F of each prompt is served from a prefix cache: ceil(ISL·(1−F)) tokens are computed
Seeded: numpy's default_rng(seed); the same seed gives the same requests.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DISTS = ("fixed", "uniform", "lognormal")
MAX_TOKENS = 2**24  # tokens per request (16.8M): beyond any model's context, and the web's context bound


@dataclass(frozen=True)
class Lengths:
    """A token-count distribution: fixed (a), uniform on [a, b], lognormal (mu = a, sigma = b of ln tokens)."""

    kind: str
    a: float
    b: float = 0.0

    @classmethod
    def parse(cls, field: str, text: str) -> "Lengths":
        parts = str(text).strip().split(":")
        kind = parts[0].lower()
        try:
            nums = [float(x) for x in parts[1:]]
        except ValueError:
            nums = None
        want = {"fixed": 1, "uniform": 2, "lognormal": 2}.get(kind)
        if want is None or nums is None or len(nums) != want:
            raise ValueError(f"{field}: {text!r}; allowed: fixed:N, uniform:a:b, lognormal:mu:sigma")
        d = cls(kind, *nums)
        if kind == "fixed" and (d.a < 1 or d.a != int(d.a)):
            raise ValueError(f"{field}: fixed:N needs a whole N >= 1, got {text!r}")
        if kind == "uniform" and not (1 <= d.a <= d.b):
            raise ValueError(f"{field}: uniform:a:b needs 1 <= a <= b, got {text!r}")
        if kind == "lognormal" and not d.b >= 0:
            raise ValueError(f"{field}: lognormal:mu:sigma needs sigma >= 0, got {text!r}")
        try:
            mean = d.mean
        except OverflowError:
            mean = math.inf
        if not mean <= MAX_TOKENS:  # NaN fails too
            raise ValueError(f"{field}: {text!r} has a mean of {mean:.3g} tokens; at most {MAX_TOKENS:,}")
        return d

    @property
    def mean(self) -> float:
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return (self.a + self.b) / 2.0
        return math.exp(self.a + self.b ** 2 / 2.0)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, int(self.a), dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(int(self.a), int(self.b) + 1, size=n)
        return np.maximum(np.rint(rng.lognormal(self.a, self.b, size=n)), 1).astype(np.int64)

    def label(self) -> str:
        return f"{self.kind}:{self.a:g}" + (f":{self.b:g}" if self.kind != "fixed" else "")


@dataclass(frozen=True)
class Requests:
    """Arrays over requests: arrival time (s; NaN for a closed loop's later requests, issued on completion)."""

    arrival_s: np.ndarray
    isl: np.ndarray
    osl: np.ndarray

    def __len__(self) -> int:
        return len(self.isl)


def read_trace(path: str | Path) -> Requests:
    """A CSV of arrival_s, input_tokens, output_tokens (a header row allowed). A malformed row names its line."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"trace: {str(path)!r} is not a file")
    rows = []
    with p.open(newline="") as f:
        for line, rec in enumerate(csv.reader(f), start=1):
            if not rec or all(not c.strip() for c in rec):
                continue
            if line == 1 and not _is_number(rec[0]):
                continue  # a header
            try:
                if len(rec) != 3:
                    raise ValueError(f"{len(rec)} fields")
                t, i, o = float(rec[0]), float(rec[1]), float(rec[2])
                if not (t >= 0 and math.isfinite(t)) or i < 1 or o < 1 or i != int(i) or o != int(o):
                    raise ValueError("values")
            except ValueError:
                raise ValueError(f"trace: {p.name} line {line}: {','.join(rec)!r}; want arrival_s >= 0, "
                                 "input_tokens >= 1, output_tokens >= 1 (whole tokens)") from None
            rows.append((t, i, o))
    if not rows:
        raise ValueError(f"trace: {p.name} has no requests")
    a = np.array(sorted(rows), dtype=float)
    return Requests(a[:, 0], a[:, 1].astype(np.int64), a[:, 2].astype(np.int64))


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


@dataclass(frozen=True)
class Workload:
    """One workload point: closed loop (concurrency) or open loop (rate), lengths, cache hits, seed."""

    isl: Lengths
    osl: Lengths
    concurrency: float | None = None
    rate: float | None = None
    cache_hit: float = 0.0
    arrivals: str = "staggered"  # closed loop only: "together" | "staggered"
    trace: Requests | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if (self.concurrency is None) == (self.rate is None) and self.trace is None:
            raise ValueError("concurrency, rate: give one (users of a closed loop, or requests/s of an open loop)")
        for name in ("concurrency", "rate"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ValueError(f"{name}: must be > 0, got {v!r}")
        if not 0.0 <= self.cache_hit < 1.0:
            raise ValueError(f"cache_hit: a fraction in [0, 1), got {self.cache_hit!r}")
        if self.arrivals not in ("together", "staggered"):
            raise ValueError(f"arrivals: {self.arrivals!r}; allowed: together, staggered")

    @property
    def closed(self) -> bool:
        return self.concurrency is not None and self.trace is None

    def requests(self, n: int) -> Requests:
        """``n`` requests (a trace: its own). Closed loop: lengths only; the simulator issues them on completion."""
        if self.trace is not None:
            return self.trace
        rng = np.random.default_rng(self.seed)
        isl, osl = self.isl.sample(rng, n), self.osl.sample(rng, n)
        if self.closed:
            arr = np.full(n, np.nan)
        else:
            arr = np.cumsum(rng.exponential(1.0 / self.rate, size=n))
        return Requests(arr, isl, osl)


def prefill_tokens(isl, cache_hit):
    """Tokens a prompt computes when a fraction F is a prefix-cache hit: max(ceil(ISL·(1−F)), 1)."""
    return np.maximum(np.ceil(np.asarray(isl, float) * (1.0 - cache_hit) - 1e-9), 1.0)


def prefill_context(isl, cache_hit, computed):
    """Mean context a computed prompt token attends: the ISL·F cached positions plus half the I computed ones."""
    return np.asarray(isl, float) * cache_hit + np.asarray(computed, float) / 2.0
