"""What each of the engine's fast paths buys on user-visible work (issue 27 item 5: keep a fast path only where it
gives >= 20% on a command people run).

Each fast path (core/fastpaths.py, called by the engine as ``fast.name``) skips forming a term that is exactly 0 (or a factor that is exactly 1) over the
grid, or narrows an array. Here each is replaced, in this benchmark's own process only, by the plain formula it
abbreviates (set on the fastpaths module, which the engine reads at each call), and the same work is timed with the shipped engine and with that one replacement, interleaved
(round-robin, median of N rounds; CPU seconds of this process, so other load on the machine counts less). The work:

  sweep-dense  tk.sweep: 3 dense models x tp 1,2,4,8 x 1,024 batches x 128 contexts on hgx-h100-8 (decode grid)
  sweep-moe    tk.sweep: deepseek-v3 x ep 8,16,32,72 x 1,024 batches x 128 contexts on gb200-nvl72
  serve        tk.serve of one model at 16 concurrencies (rows built), the CLI's question

Printed: CPU seconds per run with the shipped engine, and per fast path the slowdown of the plain formula
(plain / shipped; 1.25 = the fast path saves 20% of the time). Run: .venv/bin/python benchmarks/engine_fastpaths.py [N]
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import tokenomy as tk
from tokenomy.core import engine, fastpaths

FITS = engine.FITS_REASON


def plain_first_code(conds, codes):
    shape = np.broadcast_shapes(*(np.shape(c) for c in conds), *(np.shape(v) for v in codes))
    return np.broadcast_to(np.select([np.broadcast_to(c, shape) for c in conds], codes, 0), shape).copy()


def plain_bound(compute_s, memory_s, top, others):
    bound = np.where(np.greater_equal(compute_s, memory_s), 0, 1)
    for i, t in others:
        bound = np.where(t > top, i, bound)
        top = np.maximum(top, t)
    return bound


def plain_fit(structure, over_hbm):
    reason = np.where(np.asarray(structure) != 0, structure, np.where(over_hbm, FITS, 0))
    return reason, np.where(reason == 0, 0.0, np.nan)


def plain_period(w, stage_s, hop_total):
    h = 0.0 if hop_total is None else hop_total
    pp, M = w.pp, w.microbatches
    return np.where(w.decode, np.maximum(M * stage_s, pp * stage_s + h), (M + pp - 1.0) * stage_s + h)


PLAIN = {  # fast path -> the formula it abbreviates
    "plus": lambda x, k, y: x + k * y,
    "affine": lambda a, b, x, zero_x: a + b * x,
    "zero_of": lambda grid: 0.0 * grid,
    "first_code": plain_first_code,
    "bound": plain_bound,
    "fit": plain_fit,
    "period": plain_period,
}

CTX = [int(x) for x in np.unique(np.geomspace(1024, 131072, 128).round())]
WORK = {
    "sweep-dense": lambda: tk.sweep(model=["llama-3.1-8b", "llama-3.1-70b", "qwen3-32b"], hardware="hgx-h100-8",
                                    tp=[1, 2, 4, 8], batch=list(range(1, 1025)), context=CTX),
    "sweep-moe": lambda: tk.sweep(model="deepseek-v3", hardware="gb200-nvl72", ep=[8, 16, 32, 72],
                                  batch=list(range(1, 1025)), context=CTX),
    "serve": lambda: tk.serve(model="llama-3.1-70b", hardware="hgx-h100-8",
                              concurrency=[int(c) for c in 2 ** np.arange(16)], isl=1024, osl=256).rows(),
}


def cpu_s(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main(rounds: int = 5) -> None:
    shipped = {name: getattr(fastpaths, name) for name in PLAIN}
    for fn in WORK.values():
        fn()  # warm: catalog, calibrated sets, shapes
    variants = ("shipped", *PLAIN, "all of them")
    times = {(w, v): [] for w in WORK for v in variants}
    for _ in range(rounds):
        for variant in variants:
            for name in PLAIN if variant == "all of them" else [variant] if variant != "shipped" else []:
                setattr(fastpaths, name, PLAIN[name])
            try:
                for w, fn in WORK.items():
                    times[(w, variant)].append(cpu_s(fn))
            finally:
                for name, f in shipped.items():
                    setattr(fastpaths, name, f)
    print(f"CPU seconds, median of {rounds} interleaved rounds; slowdown = plain formula / shipped fast path")
    print(f"{'fast path':<16}" + "".join(f"{w:>14}" for w in WORK))
    base = {w: statistics.median(times[(w, "shipped")]) for w in WORK}
    print(f"{'(shipped, s)':<16}" + "".join(f"{base[w]:>14.3f}" for w in WORK))
    for v in variants[1:]:
        print(f"{v:<16}" + "".join(f"{statistics.median(times[(w, v)]) / base[w]:>13.2f}x" for w in WORK))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
