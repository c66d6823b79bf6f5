"""Reversible stack vs plain autograd, checkpointing, revlib and memcnn, in one run.

For every depth L in --depths and every method, a fresh process
(benchmarks/reversible_worker.py) trains one step of a stack of L blocks
(y1 = x1 + Attn(LN x2), y2 = x2 + MLP(LN y1); reference: two streams of width 256,
4 heads, sequence 1024, batch 2, float32) and reports
  * peak activation memory: profiler allocation trace of one step, parameter gradients
    pre-allocated;
  * CPU time per step (process time, one intra-op thread, so other processes on a
    shared machine inflate it less than wall time): the fastest of --steps timed steps
    after warm-up, and the fastest over --rounds sweeps (each round rotates the order
    of the methods); medians and wall times are recorded beside it.
Then: memory slope in L (least squares, MiB per block), time ratio to plain per depth,
and the analytical saving vs checkpointing, L x 2 x B x T x d_stream x bytes.

Allocator (--malloc, both by default, interleaved in every round, same for every
method): ``keep`` runs each worker with glibc's malloc told to keep freed memory
(GLIBC_TUNABLES below: no heap trimming, no mmap for blocks under 32 MiB); ``default``
leaves glibc's dynamic thresholds alone. With the default, a method that frees and
rebuilds one block's working set L times per step (reversible, checkpointing) can have
that memory returned to the OS and page-faulted back on the next block -- ~1e5 minor
faults per step at L = 32 -- so its time measures the allocator's heuristics as much as
the method. Each worker reports its minor faults and system time per step.

The anchors (revlib, memcnn) run when installed in the interpreter running this script;
benchmarks/reversible_env.sh builds such an environment:
    bash benchmarks/reversible_env.sh && build/reversible-bench-venv/bin/python benchmarks/reversible.py
Results are printed as a Markdown table and written to benchmarks/reversible_results.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pprint
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from tokenomy.reversible.memory_model import reversible_saving_vs_checkpoint_bytes  # noqa: E402

METHODS = ("plain", "checkpoint", "tokenomy", "revlib", "memcnn")
MIB = 2**20
RUN_KEYS = ("round", "malloc", "method", "depth", "peak_bytes", "cpu_s_min",
            "minor_faults_per_step", "installed", "error")
# trim_threshold 4 GiB: never give the top of the heap back; mmap_threshold 32 MiB: the
# largest glibc allows (its dynamic threshold's ceiling), so tensors < 32 MiB come from
# the heap and are reused instead of being mmapped, unmapped and faulted in again.
MALLOC_ENV = {
    "keep": "glibc.malloc.trim_threshold=4294967296:glibc.malloc.mmap_threshold=33554432",
    "default": None,
}


def worker_env(malloc: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    if MALLOC_ENV[malloc]:
        env["GLIBC_TUNABLES"] = MALLOC_ENV[malloc]
    return env


def run_one(method: str, depth: int, malloc: str, args) -> dict:
    cmd = [sys.executable, str(HERE / "reversible_worker.py"), "--method", method,
           "--depth", str(depth), "--steps", str(args.steps), "--warmup", str(args.warmup),
           "--d-stream", str(args.d_stream), "--heads", str(args.heads),
           "--seq", str(args.seq), "--batch", str(args.batch), "--threads", str(args.threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s,
                          env=worker_env(malloc))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"method": method, "depth": depth, "malloc": malloc, "installed": True,
                "error": tail[0][:200]}
    return {**json.loads(lines[-1]), "malloc": malloc}


def slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a + b x; returns (b, a)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return b, my - b * mx


def summarise(results: list[dict], depths: list[int]) -> dict:
    ok = [r for r in results if r.get("installed") and "error" not in r]
    plain = {r["depth"]: r["cpu_s_min"] for r in ok if r["method"] == "plain"}
    summary = {}
    for method in METHODS:
        rows = sorted((r for r in ok if r["method"] == method), key=lambda r: r["depth"])
        if len(rows) < 2:
            continue
        b, a = slope([r["depth"] for r in rows], [r["peak_bytes"] / MIB for r in rows])
        ratios = [r["cpu_s_min"] / plain[r["depth"]] for r in rows if r["depth"] in plain]
        summary[method] = {"slope_mib_per_block": b, "intercept_mib": a,
                           "time_ratio_min": min(ratios, default=None),
                           "time_ratio_max": max(ratios, default=None)}
    return summary


def markdown(results: list[dict], summary: dict, depths: list[int]) -> str:
    by = {(r["method"], r["depth"]): r for r in results}
    head = "| method | " + " | ".join(f"L={d} MiB, s" for d in depths) + \
        " | slope MiB/block | CPU time / plain |"
    lines = [head, "|" + "---|" * (len(depths) + 3)]
    for method in METHODS:
        cells = []
        for d in depths:
            r = by.get((method, d), {})
            if not r.get("installed", True):
                cells.append("not installed")
            elif "error" in r or not r:
                cells.append("error")
            else:
                cells.append(f"{r['peak_bytes'] / MIB:.1f}, {r['cpu_s_min']:.2f}")
        s = summary.get(method)
        tail = ["-", "-"] if s is None else [
            f"{s['slope_mib_per_block']:.3f}",
            f"{s['time_ratio_min']:.2f}-{s['time_ratio_max']:.2f}"]
        lines.append(f"| {method} | " + " | ".join(cells + tail) + " |")
    return "\n".join(lines)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--malloc", nargs="+", choices=tuple(MALLOC_ENV), default=list(MALLOC_ENV),
                    help="allocator settings to run (the first is the headline table)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--d-stream", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--rounds", type=int, default=3, help="sweeps; the fastest is kept")
    ap.add_argument("--timeout-s", type=float, default=1800)
    ap.add_argument("--out", type=Path, default=HERE / "reversible_results.py",
                    help="where to write the results module ('-' for nowhere)")
    return ap.parse_args(argv)


def sweep(args) -> tuple[dict, list[dict]]:
    """Fastest run per (malloc, method, depth) over all rounds, and one line per run."""
    best, runs = {}, []
    for rnd in range(args.rounds):
        for depth in args.depths:  # interleave so drifts in machine speed hit every method
            for malloc in args.malloc:
                shift = rnd % len(args.methods)
                for method in args.methods[shift:] + args.methods[:shift]:
                    r = {**run_one(method, depth, malloc, args), "round": rnd}
                    key = (malloc, method, depth)
                    old = best.get(key)
                    if old is None or "error" in old or \
                            r.get("cpu_s_min", 1e99) < old.get("cpu_s_min", 1e99):
                        best[key] = r
                    runs.append({k: r.get(k) for k in RUN_KEYS})
                    print(json.dumps(runs[-1]), flush=True)
    return best, runs


def faults_table(results: list[dict], depth: int) -> str:
    """Minor page faults and system seconds per step at one depth, per allocator setting."""
    by = {(r["malloc"], r["method"]): r for r in results if r["depth"] == depth}
    modes = list(dict.fromkeys(r["malloc"] for r in results))
    lines = [f"| L={depth}: faults/step (sys s) | " + " | ".join(modes) + " |",
             "|" + "---|" * (len(modes) + 1)]
    for method in METHODS:
        cells = [by.get((m, method), {}) for m in modes]
        if not any("minor_faults_per_step" in c for c in cells):
            continue
        lines.append(f"| {method} | " + " | ".join(
            f"{c['minor_faults_per_step']:,.0f} ({c['sys_s_per_step']:.2f})"
            if "minor_faults_per_step" in c else "-" for c in cells) + " |")
    return "\n".join(lines)


def write_results(path: Path, meta: dict, summaries: dict, by_malloc: dict, tables: dict,
                  faults: str, runs: list[dict], head: str) -> None:
    """The results module; SUMMARY/RESULTS/TABLE name the headline allocator's entries."""
    path.write_text(
        '"""Measured by benchmarks/reversible.py (generated; do not edit).\n\n'
        f'SUMMARY, RESULTS and TABLE are for malloc={head!r}; *_BY_MALLOC hold every '
        'setting run."""\n\n'
        f"META = {pprint.pformat(meta)}\n\n"
        f"SUMMARY_BY_MALLOC = {pprint.pformat(summaries)}\n\n"
        f"RESULTS_BY_MALLOC = {pprint.pformat(by_malloc)}\n\n"
        f"TABLES_BY_MALLOC = {pprint.pformat(tables)}\n\n"
        f"FAULTS_TABLE = {faults!r}\n\n"
        "# every run of every round, in order (the spread behind the fastest kept above)\n"
        f"RUNS = {pprint.pformat(runs)}\n\n"
        f"SUMMARY = SUMMARY_BY_MALLOC[{head!r}]\n"
        f"RESULTS = RESULTS_BY_MALLOC[{head!r}]\n"
        f"TABLE = TABLES_BY_MALLOC[{head!r}]\n")


def main(argv=None) -> int:
    args = parse_args(argv)
    t0 = time.time()
    best, runs = sweep(args)
    by_malloc = {m: [r for (mm, _, _), r in best.items() if mm == m] for m in args.malloc}
    summaries = {m: summarise(rs, args.depths) for m, rs in by_malloc.items()}
    tables = {m: markdown(rs, summaries[m], args.depths) for m, rs in by_malloc.items()}
    faults = faults_table(list(best.values()), max(args.depths))
    for m in args.malloc:
        print(f"\nmalloc={m} ({MALLOC_ENV[m] or 'glibc defaults'}):\n{tables[m]}")
    print("\n" + faults + "\n")
    saving = reversible_saving_vs_checkpoint_bytes(1, args.batch, args.seq, args.d_stream, 4)
    print(f"analytical saving vs checkpointing: L x 2 x B x T x d_stream x bytes = "
          f"L x {saving / MIB:.2f} MiB per block at this configuration")
    # a 70B-class model (Llama-3.1-70B shape: 80 layers, hidden 8192) as a two-stream
    # reversible transformer, one 8192-token micro-batch, bf16 activations
    llm = reversible_saving_vs_checkpoint_bytes(80, 1, 8192, 8192, 2)
    print(f"at LLM size (L=80, d_stream=8192, B x T = 1 x 8192, bf16): {llm / 2**30:.1f} GiB "
          "per micro-batch in flight")
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "wall_s": round(time.time() - t0, 1), "argv": sys.argv[1:],
            "malloc_env": {m: MALLOC_ENV[m] for m in args.malloc},
            "config": {"d_stream": args.d_stream, "heads": args.heads, "seq": args.seq,
                       "batch": args.batch, "dtype": "float32", "steps": args.steps,
                       "threads": args.threads, "rounds": args.rounds}}
    if str(args.out) != "-":
        write_results(args.out, meta, summaries, by_malloc, tables, faults, runs,
                      args.malloc[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
