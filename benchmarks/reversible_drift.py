"""Reconstruction drift of the reversible stack vs depth, float64 / float32 / bfloat16.

    python benchmarks/reversible_drift.py [--depths 1 4 16 64] [--d-stream 256]

Prints max|x - R^-1(R(x))| / max|x| (tokenomy.reversible.drift) as a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tokenomy.reversible.drift import drift_table  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--d-stream", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--seeds", type=int, default=3, help="worst case over this many seeds")
    args = ap.parse_args(argv)
    tables = [drift_table(tuple(args.depths), d_stream=args.d_stream, n_heads=args.heads,
                          seq_len=args.seq, seed=s) for s in range(args.seeds)]
    print("| dtype | " + " | ".join(f"L={d}" for d in args.depths) + " |")
    print("|---|" + "---|" * len(args.depths))
    for dtype in tables[0]:
        worst = [max(t[dtype][d] for t in tables) for d in args.depths]
        print(f"| {dtype} | " + " | ".join(f"{w:.1e}" for w in worst) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
