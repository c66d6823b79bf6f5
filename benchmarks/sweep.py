"""Decode-grid sweep speed: the one engine (real tp-8 layout, calibrated efficiency) vectorised over batch x context,
vs the same engine called one configuration at a time.

Grid: every catalog model x every catalog chip x 128 batch sizes in 1..4096 x 11 contexts in 1k..1M, each on a
tensor-parallel layout over 8 chips (tp 8, or the largest tp <= 8 that divides the heads, dp for the rest) with the
chip's calibrated efficiency set. Both measurements run in this process; we print medians of repeated runs and their
ratio. Run: .venv/bin/python benchmarks/sweep.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from tokenomy.answers.resolve import efficiency_of
from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout

CHIPS = 8


def _layout(m) -> Layout:
    a = m.layers[0].attention
    tp = max(t for t in (1, 2, 4, 8) if a.num_heads % t == 0)
    return Layout(tp=tp, dp=CHIPS // tp)


def build_grid():
    models = [loader.model(n) for n in loader.model_names()]
    chips = [loader.hardware(n) for n in loader.chip_names()]
    deps = [Deployment(m, h, _layout(m), eff=efficiency_of(h)) for m in models for h in chips]
    B = np.unique(np.geomspace(1, 4096, 128).round()).reshape(-1, 1)
    C = (1024 * 2.0 ** np.arange(11)).reshape(1, -1)
    return models, chips, deps, B, C


def vectorised(deps, B, C):
    return sum(np.size(d.run(B, C).step_s) for d in deps)


def one_at_a_time(deps, B, C, samples):
    rng = np.random.default_rng(0)
    Bf, Cf = B.ravel(), C.ravel()
    for _ in range(samples):
        d = deps[rng.integers(len(deps))]
        d.run(float(Bf[rng.integers(Bf.size)]), float(Cf[rng.integers(Cf.size)]))
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
    models, chips, deps, B, C = build_grid()
    vec_rate, n = timed(vectorised, deps, B, C)
    loop_rate, m = timed(one_at_a_time, deps, B, C, 2000, repeats=3)
    print(f"grid: {len(models)} models x {len(chips)} chips x {B.size} batches x {C.size} contexts = {n:,} configs "
          f"(tp-8 layouts, calibrated)")
    print(f"vectorised:      {vec_rate:,.0f} configs/s (median of 5)")
    print(f"one at a time:   {loop_rate:,.0f} configs/s (median of 3 x {m} configs)")
    print(f"ratio:           {vec_rate / loop_rate:,.0f}x")


if __name__ == "__main__":
    main()
