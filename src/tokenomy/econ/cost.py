"""Dollars per token from a pass, and the roofline terms split by what is read.

    $/token = n_chips · ($/chip-h / 3600) · step_s / tokens_per_step               (lecture §2.1: rental ÷ tokens)
    $/Mtok  = 1e6 · $/token

``Serving`` bundles one model on one hardware with the knobs every serving-economics function shares;
``terms`` re-derives the step from the engine's byte and FLOP counts so each memory term (weights, KV,
activations) and each compute term (weight matmuls, attention) can be reported on its own. The times are
*unmasked* (a point that does not fit still has times, so solvers can run through it); ``fits`` says which
points are real.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.coeffs import ModelCoeffs, coefficients
from tokenomy.core.inference import PassResult, run_pass
from tokenomy.core.roofline import BOUND_NAMES, Efficiency
from tokenomy.specs import Hardware
from tokenomy.units import SECONDS_PER_HOUR


def usd_per_token(step_s, tokens_per_step, chips, usd_per_chip_hour):
    """$ per token = chips · $/chip-s · step_s / tokens per step (broadcasts)."""
    return np.asarray(chips, float) * np.asarray(usd_per_chip_hour, float) / SECONDS_PER_HOUR * \
        np.asarray(step_s, float) / np.asarray(tokens_per_step, float)


def usd_per_mtok(step_s, tokens_per_step, chips, usd_per_chip_hour):
    """$ per million tokens (lecture L27: 72 chips · $2/h · 20 ms / 2,000 tokens = $0.40/M)."""
    return 1e6 * usd_per_token(step_s, tokens_per_step, chips, usd_per_chip_hour)


def check_positive(name: str, v) -> float:
    """A positive finite float or a one-line ValueError naming the field."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a positive number, got {v!r}") from None
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{name}: must be a positive number, got {v!r}")
    return x


@dataclass(frozen=True)
class Serving:
    """One model on one hardware: the shared input of batch, context, pricing, speculative and cache analyses."""

    model: ModelArch
    hardware: Hardware
    chips: int | None = None  # default: the system's chip count
    weight_dtype: str | None = None  # default: the checkpoint's own quantization
    kv_dtype: str = "bf16"
    eff: Efficiency = Efficiency()
    usd_per_chip_hour: float | None = None  # default: the catalog's rental price

    def __post_init__(self) -> None:
        if self.chips is not None and (int(self.chips) != self.chips or self.chips <= 0):
            raise ValueError(f"chips: must be a positive integer, got {self.chips}")
        if self.usd_per_chip_hour is not None:
            check_positive("usd_per_chip_hour", self.usd_per_chip_hour)

    @property
    def n(self) -> int:
        return self.hardware.num_chips if self.chips is None else int(self.chips)

    @property
    def price(self) -> float:
        """$ per chip-hour: the override, else the catalog's."""
        return self.hardware.usd_per_chip_hour if self.usd_per_chip_hour is None else float(self.usd_per_chip_hour)

    @cached_property
    def coeffs(self) -> ModelCoeffs:
        return coefficients(self.model)

    def run(self, batch, context, len_pass=1) -> PassResult:
        return run_pass(self.model, self.hardware, batch=batch, context=context, len_pass=len_pass, chips=self.n,
                        weight_dtype=self.weight_dtype, kv_dtype=self.kv_dtype, eff=self.eff, coeffs=self.coeffs)

    def terms(self, batch, context, len_pass=1, kv_read_fraction=1.0) -> "Terms":
        return terms(self.run(batch, context, len_pass), self.coeffs, self.eff, self.price, kv_read_fraction)

    def label(self) -> str:
        return f"{self.model.name} on {self.n} x {self.hardware.chip.name}"


@dataclass(frozen=True)
class Terms:
    """Step terms in seconds per pass (arrays over the grid, unmasked) and what follows from them."""

    batch: object
    context: object
    len_pass: object
    matmul_s: object  # weight matmuls: T · 2·N_active / (n·peak)
    attention_s: object  # q·k and p·v over the context
    compute_s: object
    weights_s: object  # weight bytes read / (n·HBM_bw)
    kv_s: object  # KV read + written
    other_s: object  # activations spilled to HBM
    memory_s: object
    step_s: object  # max(compute, memory) + comms + overhead
    bound: object  # index into BOUND_NAMES
    tokens_per_step: object
    tokens_per_s: object
    tokens_per_s_per_chip: object
    tokens_per_s_per_user: object  # decode: one token per sequence per step
    usd_per_mtok: object
    mfu: object
    memory_per_chip_bytes: object
    hbm_bytes: object  # usable HBM per chip
    fits: object

    def bound_name(self, i: int) -> str:
        return BOUND_NAMES[int(np.ravel(np.broadcast_to(self.bound, np.shape(self.step_s)))[i])]


def terms(r: PassResult, c: ModelCoeffs, eff: Efficiency, usd_per_chip_hour: float,
          kv_read_fraction=1.0) -> Terms:
    """Split a pass into named terms. ``kv_read_fraction`` scales the KV read and attention FLOPs
    (sparse attention reads only part of the context; 1 = dense)."""
    s, n = r.step, r.chips
    shape = np.broadcast(s.batch, s.context, s.len_pass, s.flops, s.weight_bytes, s.memory_per_chip_bytes).shape
    B, C, S = (np.broadcast_to(x, shape) for x in (s.batch, s.context, s.len_pass))
    T = B * S
    peak = n * r.peak_flops_per_s * eff.flops_fraction
    bw = n * r.hbm_bytes_per_s * eff.hbm_fraction
    matmul_flops = T * c.matmul_flops_per_token
    attn_flops = (s.flops - matmul_flops) * kv_read_fraction
    matmul_s, attention_s = matmul_flops / peak, attn_flops / peak
    compute_s = matmul_s + attention_s
    weights_s = s.weight_bytes / bw
    kv_s = (s.kv_read_bytes * kv_read_fraction + s.kv_write_bytes) / bw
    other_s = s.act_bytes / bw
    memory_s = weights_s + kv_s + other_s
    comms = np.nan_to_num(np.broadcast_to(s.comms_s, shape))  # run_pass adds none (layouts: tokenomy.parallel)
    step_s = np.maximum(compute_s, memory_s) + comms + eff.overhead_s
    bound = np.argmax(np.stack(np.broadcast_arrays(compute_s, memory_s, comms, np.full(shape, eff.overhead_s))),
                      axis=0)
    tps = T / step_s
    out = dict(
        batch=B, context=C, len_pass=S, matmul_s=matmul_s, attention_s=attention_s, compute_s=compute_s,
        weights_s=weights_s, kv_s=kv_s, other_s=other_s, memory_s=memory_s, step_s=step_s, bound=bound,
        tokens_per_step=T, tokens_per_s=tps, tokens_per_s_per_chip=tps / n, tokens_per_s_per_user=S / step_s,
        usd_per_mtok=usd_per_mtok(step_s, T, n, usd_per_chip_hour),
        mfu=(matmul_flops + attn_flops) / (step_s * n * r.peak_flops_per_s),
        memory_per_chip_bytes=s.memory_per_chip_bytes, hbm_bytes=s.hbm_bytes, fits=s.fits)
    return Terms(**{k: np.broadcast_to(v, shape) for k, v in out.items()})


def first_crossing(f, lo: float, hi: float, points: int = 512, iters: int = 60) -> float | None:
    """Smallest x in [lo, hi] (log-spaced search, then bisection) where f changes sign from < 0 to >= 0.

    ``f`` takes an array and returns an array. None when f < 0 on the whole grid; ``lo`` when f(lo) >= 0.
    """
    x = np.geomspace(lo, hi, points)
    y = np.asarray(f(x), dtype=float)
    idx = np.flatnonzero(y >= 0)
    if idx.size == 0:
        return None
    i = int(idx[0])
    if i == 0:
        return float(lo)
    a, b = float(x[i - 1]), float(x[i])
    for _ in range(iters):
        mid = np.sqrt(a * b)
        if float(np.asarray(f(np.array([mid])))[0]) >= 0:
            b = mid
        else:
            a = mid
    return b
