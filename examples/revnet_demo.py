"""Train a small reversible GPT and its standard twin on a generated corpus (CPU).

    python examples/revnet_demo.py --steps 300        (or: tokenomy revnet-demo)

Prints both loss curves side by side (they match up to floating-point noise: the
reversible model computes the same function) and the peak activation memory of one
training step of each.
"""

from __future__ import annotations

import argparse

from tokenomy.cli.reversible import demo_lines
from tokenomy.reversible.demo import run_demo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="revnet-demo", description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", default="micro", choices=["nano", "micro", "mini", "small"])
    ap.add_argument("--layers", type=int, default=None, help="override the number of layers")
    ap.add_argument("--every", type=int, default=25, help="print every N steps")
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be >= 1")
    r = run_demo(steps=args.steps, seed=args.seed, size=args.size,
                 num_hidden_layers=args.layers)
    print("\n".join(demo_lines(r, args.every)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
