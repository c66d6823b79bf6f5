"""The notebook API on a 64 x 16 decode sweep: the answer (compute), then rows(), to_pandas(), to_xarray() and
explain(), each as a multiple of the compute time (medians of N runs in one process; issue 14: rows() took 685 ms
for a sweep computed in 4.4 ms).

    .venv/bin/python benchmarks/api_rows.py [N]
"""

from __future__ import annotations

import statistics
import sys
import time

import tokenomy as tk

BATCH = list(range(1, 65))
CONTEXT = [2 ** i for i in range(7, 23)]  # 128 .. 4M tokens


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(n: int = 7) -> None:
    ask = lambda: tk.decode("llama-3.1-70b", "hgx-h100-8", batch=BATCH, context=CONTEXT)  # noqa: E731
    ask().to_xarray()  # imports (pandas, xarray) and catalog caches out of the way
    steps = {"answer (compute)": [], "rows()": [], "to_pandas()": [], "to_xarray()": [], "explain()": []}
    for _ in range(n):
        holder = {}
        steps["answer (compute)"].append(timed(lambda: holder.update(r=ask())))
        r = holder["r"]
        steps["rows()"].append(timed(r.rows))
        steps["to_pandas()"].append(timed(r.to_pandas))
        steps["to_xarray()"].append(timed(r.to_xarray))
        steps["explain()"].append(timed(r.explain))
    base = statistics.median(steps["answer (compute)"])
    print(f"decode sweep {len(BATCH)} x {len(CONTEXT)} = {len(BATCH) * len(CONTEXT)} points, median of {n}")
    for label, ts in steps.items():
        med = statistics.median(ts)
        print(f"  {label:18s} {med * 1e3:8.1f} ms   {med / base:5.2f}x the compute")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
