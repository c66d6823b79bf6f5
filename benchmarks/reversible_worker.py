"""One benchmark configuration (method x depth) in a fresh process; prints one JSON line.

Used by benchmarks/reversible.py; run by hand as
    python benchmarks/reversible_worker.py --method tokenomy --depth 8

Methods (same function y1 = x1 + Attn(x2), y2 = x2 + MLP(y1) per block, same weights):
    plain       standard autograd, every activation stored
    checkpoint  torch.utils.checkpoint(use_reentrant=False) around each block
    tokenomy    tokenomy.reversible (per-block reversible autograd nodes)
    revlib      revlib.ReversibleSequential over [F1, G1, F2, G2, ...]   (if installed)
    memcnn      memcnn.InvertibleModuleWrapper(AdditiveCoupling(F, G))   (if installed)
Peak activation memory: profiler allocation trace of one training step, with parameter
gradients already allocated (zeroed in place), minus nothing else: the running sum of
allocations/frees from the step's start (tokenomy.reversible.measure).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

from tokenomy.reversible.measure import peak_allocated_bytes  # noqa: E402
from tokenomy.reversible.stack import ReversibleSequence  # noqa: E402
from tokenomy.reversible.transformer import ReversibleTransformerBlock  # noqa: E402

METHODS = ("plain", "checkpoint", "tokenomy", "revlib", "memcnn")


def build_stack(depth: int, d_stream: int, n_heads: int, seed: int) -> ReversibleSequence:
    torch.manual_seed(seed)
    return ReversibleSequence([ReversibleTransformerBlock(d_stream, n_heads) for _ in range(depth)])


def make_runner(method: str, stack: ReversibleSequence):
    """(x1, x2) -> (y1, y2) for ``method``, all sharing the parameters of ``stack``."""
    if method == "plain":
        return lambda x1, x2: stack(x1, x2, reversible=False)
    if method == "tokenomy":
        return lambda x1, x2: stack(x1, x2, reversible=True)
    if method == "checkpoint":
        def run(x1, x2):
            for block in stack.blocks:
                x1, x2 = checkpoint(block, x1, x2, use_reentrant=False)
            return x1, x2
        return run
    if method == "revlib":
        import revlib
        seq = revlib.ReversibleSequential(*[m for b in stack.blocks for m in (b.f, b.g)],
                                          split_dim=-1)
        return lambda x1, x2: seq(torch.cat([x1, x2], -1)).chunk(2, -1)
    if method == "memcnn":
        import memcnn
        seq = nn.Sequential(*[memcnn.InvertibleModuleWrapper(
            memcnn.AdditiveCoupling(b.f, b.g, split_dim=-1), keep_input=False,
            keep_input_inverse=False) for b in stack.blocks])
        return lambda x1, x2: seq(torch.cat([x1, x2], -1)).chunk(2, -1)
    raise ValueError(f"method={method!r}; allowed: {', '.join(METHODS)}")


def available(method: str) -> bool:
    if method in ("revlib", "memcnn"):
        try:
            __import__(method)
        except ImportError:
            return False
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", choices=METHODS, required=True)
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--d-stream", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="timed steps (median reported)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if not available(args.method):
        print(json.dumps({"method": args.method, "depth": args.depth, "installed": False}))
        return 0
    stack = build_stack(args.depth, args.d_stream, args.heads, seed=0)
    run = make_runner(args.method, stack)
    shape = (args.batch, args.seq, args.d_stream)
    gen = torch.Generator().manual_seed(1)
    x1_ref = torch.randn(shape, generator=gen).requires_grad_(True)
    x2_ref = torch.randn(shape, generator=gen).requires_grad_(True)

    # Same function as the plain stack? (checked on the step's own inputs, no grad)
    with torch.no_grad():
        ref = stack(x1_ref, x2_ref, reversible=False)
        got = run(x1_ref.clone(), x2_ref.clone())
        max_abs_diff = max((a - b).abs().max().item() for a, b in zip(ref, got))
    del ref, got

    def step():
        # fresh copies: memcnn frees its inputs' storage
        x1 = x1_ref.detach().clone().requires_grad_(True)
        x2 = x2_ref.detach().clone().requires_grad_(True)
        y1, y2 = run(x1, x2)
        loss = y1.sum() + y2.sum()
        loss.backward()

    for _ in range(max(1, args.warmup)):  # warm-up; the first allocates every .grad
        step()
    times, cpu_times, faults, sys_times = [], [], [], []
    for _ in range(args.steps):
        for p in stack.parameters():
            p.grad.zero_()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        # minor page faults: pages touched for the first time since the allocator got
        # them from the OS (after it handed them back, they fault again)
        faults.append(r1.ru_minflt - r0.ru_minflt)
        sys_times.append(r1.ru_stime - r0.ru_stime)
    for p in stack.parameters():
        p.grad.zero_()
    peak = peak_allocated_bytes(step)
    print(json.dumps({
        "method": args.method, "depth": args.depth, "installed": True,
        "peak_bytes": peak, "step_s": statistics.median(times), "step_s_all": times,
        "cpu_s": statistics.median(cpu_times), "cpu_s_min": min(cpu_times),
        "cpu_s_all": cpu_times, "max_abs_diff_vs_plain": max_abs_diff,
        "minor_faults_per_step": statistics.median(faults),
        "sys_s_per_step": statistics.median(sys_times),
        "threads": torch.get_num_threads(), "torch": torch.__version__,
        "config": {"d_stream": args.d_stream, "heads": args.heads, "seq": args.seq,
                   "batch": args.batch, "dtype": "float32"},
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
