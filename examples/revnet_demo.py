"""Train a small reversible GPT and its standard twin on a generated corpus (CPU).

    python examples/revnet_demo.py --steps 300        (or: tokenomy revnet-demo)

Prints both loss curves side by side (they match up to floating-point noise: the
reversible model computes the same function) and the peak activation memory of one
training step of each.
"""

from __future__ import annotations

import argparse

from tokenomy.reversible.demo import run_demo

MIB = 2**20


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
    cfg = r["config"]
    print(f"reversible GPT '{args.size}': {cfg.num_hidden_layers} layers, 2 streams x "
          f"{cfg.d_stream}, {cfg.num_attention_heads} heads, {r['parameters']:,} parameters; "
          f"corpus {r['corpus_chars']:,} characters (generated), vocab {cfg.vocab_size}")
    print(f"{'step':>6} {'loss reversible':>16} {'loss standard':>14} {'|diff|':>9}")
    for i, (a, b) in enumerate(zip(r["loss_reversible"], r["loss_standard"])):
        if i % args.every == 0 or i == args.steps - 1:
            print(f"{i:>6} {a:>16.4f} {b:>14.4f} {abs(a - b):>9.2e}")
    print(f"max |loss difference| over {r['steps']} steps: {r['max_abs_loss_diff']:.2e}")
    for kind in ("reversible", "standard"):
        print(f"peak activation memory, {kind:>10}: "
              f"{r[f'peak_activation_bytes_{kind}'] / MIB:8.2f} MiB   "
              f"(training time {r[f'train_s_{kind}']:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
