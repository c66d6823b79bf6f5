"""Decode-grid sweep speed: the vectorised engine vs the same engine called one configuration at a time.

Grid: every catalog model x every catalog chip x 128 batch sizes in 1..4096 x 11 contexts in 1k..1M.
Both measurements run in this process; we print medians of repeated runs and their ratio.
Run: .venv/bin/python benchmarks/sweep.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.coeffs import coefficients, reshape, stack
from tokenomy.core.inference import hw_coeffs
from tokenomy.core.roofline import HwCoeffs, step


def build_grid():
    models = [loader.model(n) for n in loader.model_names()]
    chips = [loader.hardware(n) for n in loader.chip_names()]
    coeffs = [coefficients(m) for m in models]
    hws = [hw_coeffs(h, "bf16")[0] for h in chips]
    M, H = len(models), len(hws)
    mc = reshape(stack(coeffs), (M, 1, 1, 1))
    hc = HwCoeffs(*(np.array([getattr(h, f) for h in hws]).reshape(1, H, 1, 1)
                    for f in ("peak_flops_per_s", "hbm_bytes_per_s", "hbm_bytes")))
    B = np.unique(np.geomspace(1, 4096, 128).round()).reshape(1, 1, -1, 1)
    C = (1024 * 2.0 ** np.arange(11)).reshape(1, 1, 1, -1)
    return coeffs, hws, mc, hc, B, C


def vectorised(mc, hc, B, C, chips=8):
    s = step(mc, hc, B, C, 1, chips)
    return np.asarray(s.step_s).size


def one_at_a_time(coeffs, hws, B, C, samples, chips=8):
    rng = np.random.default_rng(0)
    Bf, Cf = B.ravel(), C.ravel()
    for _ in range(samples):
        c = coeffs[rng.integers(len(coeffs))]
        h = hws[rng.integers(len(hws))]
        step(c, h, float(Bf[rng.integers(Bf.size)]), float(Cf[rng.integers(Cf.size)]), 1, chips)
    return samples


def timed(fn, *args, repeats=5):
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = fn(*args)
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates), n


def main() -> None:
    try:  # one core: the target is per core
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass
    coeffs, hws, mc, hc, B, C = build_grid()
    vec_rate, n = timed(vectorised, mc, hc, B, C)
    loop_rate, m = timed(one_at_a_time, coeffs, hws, B, C, 2000, repeats=3)
    print(f"grid: {len(coeffs)} models x {len(hws)} chips x {B.size} batches x {C.size} contexts = {n:,} configs")
    print(f"vectorised:      {vec_rate:,.0f} configs/s (median of 5)")
    print(f"one at a time:   {loop_rate:,.0f} configs/s (median of 3 x {m} configs)")
    print(f"ratio:           {vec_rate / loop_rate:,.0f}x")


if __name__ == "__main__":
    main()
