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

The anchors (revlib, memcnn) run when installed in the interpreter running this script;
benchmarks/reversible_env.sh builds such an environment:
    bash benchmarks/reversible_env.sh && build/reversible-bench-venv/bin/python benchmarks/reversible.py
Results are printed as a Markdown table and written to benchmarks/reversible_results.py.
"""

from __future__ import annotations

import argparse
import json
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


def run_one(method: str, depth: int, args) -> dict:
    cmd = [sys.executable, str(HERE / "reversible_worker.py"), "--method", method,
           "--depth", str(depth), "--steps", str(args.steps), "--warmup", str(args.warmup),
           "--d-stream", str(args.d_stream), "--heads", str(args.heads),
           "--seq", str(args.seq), "--batch", str(args.batch), "--threads", str(args.threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"method": method, "depth": depth, "installed": True, "error": tail[0][:200]}
    return json.loads(lines[-1])


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
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
    args = ap.parse_args(argv)
    best, t0 = {}, time.time()
    for rnd in range(args.rounds):
        for depth in args.depths:  # interleave methods so drifts in machine speed hit all
            shift = rnd % len(args.methods)
            for method in args.methods[shift:] + args.methods[:shift]:
                r = run_one(method, depth, args)
                r["round"] = rnd
                old = best.get((method, depth))
                if old is None or "error" in old or \
                        r.get("cpu_s_min", 1e99) < old.get("cpu_s_min", 1e99):
                    best[(method, depth)] = r
                print(json.dumps({k: r.get(k) for k in ("round", "method", "depth", "peak_bytes",
                                                         "cpu_s_min", "cpu_s", "installed",
                                                         "error")}), flush=True)
    results = list(best.values())
    summary = summarise(results, args.depths)
    table = markdown(results, summary, args.depths)
    saving = reversible_saving_vs_checkpoint_bytes(1, args.batch, args.seq, args.d_stream, 4)
    print("\n" + table + "\n")
    print(f"analytical saving vs checkpointing: L x 2 x B x T x d_stream x bytes = "
          f"L x {saving / MIB:.2f} MiB per block at this configuration")
    # a 70B-class model (Llama-3.1-70B shape: 80 layers, hidden 8192) as a two-stream
    # reversible transformer, one 8192-token micro-batch, bf16 activations
    llm = reversible_saving_vs_checkpoint_bytes(80, 1, 8192, 8192, 2)
    print(f"at LLM size (L=80, d_stream=8192, B x T = 1 x 8192, bf16): {llm / 2**30:.1f} GiB "
          "per micro-batch in flight")
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "wall_s": round(time.time() - t0, 1), "argv": sys.argv[1:],
            "config": {"d_stream": args.d_stream, "heads": args.heads, "seq": args.seq,
                       "batch": args.batch, "dtype": "float32", "steps": args.steps,
                       "threads": args.threads, "rounds": args.rounds}}
    if str(args.out) != "-":
        args.out.write_text(
            '"""Measured by benchmarks/reversible.py (generated; do not edit)."""\n\n'
            f"META = {pprint.pformat(meta)}\n\n"
            f"SUMMARY = {pprint.pformat(summary)}\n\n"
            f"RESULTS = {pprint.pformat(results)}\n\n"
            f"TABLE = {table!r}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
