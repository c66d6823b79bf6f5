"""Train a small reversible GPT and its standard twin side by side on the CPU.

Both start from the same weights, see the same batches and the same dropout seeds, so
their loss curves differ only by floating-point reconstruction error (a reversible
model computes the same function). The peak activation memory of one training step of
each is measured with the profiler's allocation trace (tokenomy.reversible.measure).
"""

from __future__ import annotations

import copy
import time

import torch

from tokenomy.reversible.corpus import CharTokenizer, generate_corpus
from tokenomy.reversible.gpt import RevGPT, RevGPTConfig
from tokenomy.reversible.measure import peak_allocated_bytes


def _batches(data: torch.Tensor, steps: int, batch_size: int, seq_len: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, data.numel() - seq_len - 1, (batch_size,), generator=gen)
        x = torch.stack([data[s:s + seq_len] for s in starts.tolist()])
        y = torch.stack([data[s + 1:s + seq_len + 1] for s in starts.tolist()])
        yield x, y


def _step_peak_bytes(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    """Peak bytes allocated by forward+backward, parameter gradients already allocated."""
    for p in model.parameters():
        if p.grad is None:
            p.grad = torch.zeros_like(p)

    def step():
        _, loss = model(x, y)
        loss.backward()

    peak = peak_allocated_bytes(step)
    model.zero_grad(set_to_none=True)
    return peak


def run_demo(steps: int = 300, seed: int = 0, size: str = "micro", seq_len: int = 64,
             batch_size: int = 16, lr: float = 3e-3, dropout: float = 0.1,
             corpus_chars: int = 100_000, num_hidden_layers: int | None = None) -> dict:
    """Train both models for ``steps`` AdamW steps; return their curves and peak memory."""
    text = generate_corpus(corpus_chars, seed=seed)
    tok = CharTokenizer(text)
    data = torch.tensor(tok.encode(text), dtype=torch.long)
    overrides = dict(vocab_size=tok.vocab_size, max_position_embeddings=seq_len,
                     dropout=dropout)
    if num_hidden_layers is not None:
        overrides["num_hidden_layers"] = num_hidden_layers
    cfg = RevGPTConfig.from_size(size, **overrides)
    torch.manual_seed(seed)
    reversible = RevGPT(cfg, reversible=True)
    standard = copy.deepcopy(reversible).twin()  # same initial weights, own copy
    models = {"reversible": reversible, "standard": standard}
    opts = {k: torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.01)
            for k, m in models.items()}
    losses = {k: [] for k in models}
    seconds = {k: 0.0 for k in models}
    for step, (x, y) in enumerate(_batches(data, steps, batch_size, seq_len, seed + 1)):
        for name, model in models.items():
            t0 = time.perf_counter()
            torch.manual_seed(seed * 100_003 + step)  # same dropout masks for both
            _, loss = model(x, y)
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            opts[name].step()
            seconds[name] += time.perf_counter() - t0
            losses[name].append(loss.item())
    x, y = next(_batches(data, 1, batch_size, seq_len, seed + 2))
    peaks = {k: _step_peak_bytes(m, x, y) for k, m in models.items()}
    diffs = [abs(a - b) for a, b in zip(losses["reversible"], losses["standard"])]
    return {
        "steps": steps, "seed": seed, "config": cfg, "corpus_chars": len(text),
        "parameters": cfg.parameter_count(), "batch_size": batch_size, "seq_len": seq_len,
        "loss_reversible": losses["reversible"], "loss_standard": losses["standard"],
        "max_abs_loss_diff": max(diffs, default=0.0),
        "peak_activation_bytes_reversible": peaks["reversible"],
        "peak_activation_bytes_standard": peaks["standard"],
        "train_s_reversible": seconds["reversible"], "train_s_standard": seconds["standard"],
    }
