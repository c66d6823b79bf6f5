"""``tokenomy revnet-demo``: train a small reversible GPT and its standard twin on the CPU (needs the torch extra)."""

from __future__ import annotations

import typer

from tokenomy.cli.app import UsageError, app, guarded
from tokenomy.cli.render import to_json

MIB = 2.0**20
SIZES = ("nano", "micro", "mini", "small")


def demo_lines(r: dict, every: int) -> list[str]:
    """The two loss curves side by side and the peak activation memory of one step of each."""
    cfg = r["config"]
    lines = [f"reversible GPT: {cfg.num_hidden_layers} layers, 2 streams x {cfg.d_stream}, "
             f"{cfg.num_attention_heads} heads, {r['parameters']:,} parameters; corpus {r['corpus_chars']:,} "
             f"characters (generated), vocab {cfg.vocab_size}",
             f"{'step':>6} {'loss reversible':>16} {'loss standard':>14} {'|diff|':>9}"]
    for i, (a, b) in enumerate(zip(r["loss_reversible"], r["loss_standard"])):
        if i % every == 0 or i == r["steps"] - 1:
            lines.append(f"{i:>6} {a:>16.4f} {b:>14.4f} {abs(a - b):>9.2e}")
    lines.append(f"max |loss difference| over {r['steps']} steps: {r['max_abs_loss_diff']:.2e}")
    for kind in ("reversible", "standard"):
        lines.append(f"peak activation memory, {kind:>10}: {r[f'peak_activation_bytes_{kind}'] / MIB:8.2f} MiB   "
                     f"(training time {r[f'train_s_{kind}']:.1f} s)")
    return lines


@app.command("revnet-demo")
@guarded
def revnet_demo_cmd(steps: int = typer.Option(300, "--steps", help="Training steps."),
                    seed: int = typer.Option(0, "--seed"),
                    size: str = typer.Option("micro", "--size", help=f"One of {', '.join(SIZES)}."),
                    layers: int = typer.Option(None, "--layers", help="Override the number of layers."),
                    every: int = typer.Option(25, "--every", help="Print every N steps."),
                    as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Train a small reversible GPT and its standard twin on a generated corpus (CPU): the loss curves match
    and the reversible one's activation memory does not grow with depth.

    Example: tokenomy revnet-demo --steps 300 --layers 8
    """
    if size not in SIZES:
        raise UsageError(f"--size: {size!r} not known; allowed: {', '.join(SIZES)}")
    try:
        from tokenomy.reversible.demo import run_demo
    except ImportError:
        raise UsageError("revnet-demo needs PyTorch: pip install 'tokenomy[torch]'") from None
    r = run_demo(steps=steps, seed=seed, size=size, num_hidden_layers=layers)
    if as_json:
        print(to_json({k: v for k, v in r.items() if k != "config"} | {"layers": r["config"].num_hidden_layers}))
        return
    print("\n".join(demo_lines(r, every)))
