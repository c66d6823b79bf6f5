"""Pope et al. 2022, "Efficiently Scaling Transformer Inference" (arXiv 2211.05102): layouts on a TPU torus.

Feed-forward communication per layer and chip, in elements (x bytes/elem / ICI bandwidth = seconds), §3.2-3.3
with B = batch, L = tokens per sequence in the pass, E = d_model, F = d_ff, n chips (lecture.md §3.3):
    1D weight-stationary   E x F_xyz                     2·B·L·E                     (constant in n)
    2D weight-stationary   E_x x F_yz, X = sqrt(n·E/F)   2·B·L·(E/X + F/YZ) = 8·B·L·E/sqrt(n) at F = 4E
    weight-gathered (N)    weights all-gathered over N   2·B·L·E/N + 2·E·F·N/n, best N = sqrt(B·L·n/F)
                           (N = X, XY, XYZ of the torus: the X-, XY-, XYZ-weight-gathered layouts)
Attention with multiquery (§3.3): head-sharding replicates the single K/V head on every chip; batch-sharding
splits the KV cache n ways for an all-to-all of Q and the attention output (2·B·L·H·d_head/n elements).
Table 1 (max context, PaLM 540B, 64 TPU v4 chips, 30% of HBM for KV) follows from the plan engine's KV split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout

TORUS_64 = (4, 4, 4)
LAYOUTS = ("1D weight-stationary", "2D weight-stationary", "X weight-gathered", "XY weight-gathered",
           "XYZ weight-gathered")
# Table 1 of the paper (max context length), as quoted in lecture.md §3.4: variant -> {batch: tokens}.
TABLE1_PAPER = {"multihead": {128: 1320, 512: 330}, "baseline multiquery": {128: 660, 512: 165},
                "optimized multiquery": {128: 43000, 512: 10700}}


def ws1d_elems(B, L, E, F, n):
    """1D weight-stationary (Megatron): all-gather the input, reduce-scatter the output: 2·B·L·E."""
    return 2.0 * np.asarray(B, dtype=float) * L * E + 0.0 * np.asarray(n, dtype=float)


def ws2d_split(n, E, F):
    """The 2D layout's optimal split X = sqrt(n·E/F), YZ = n/X (64 chips, F = 4E: X = 4, YZ = 16)."""
    X = np.sqrt(np.asarray(n, dtype=float) * E / F)
    return X, np.asarray(n, dtype=float) / X


def ws2d_elems(B, L, E, F, n, X=None):
    """2D weight-stationary: 2·B·L·(E/X + F/YZ); at the optimal X this is 4·B·L·sqrt(E·F/n)."""
    X = ws2d_split(n, E, F)[0] if X is None else np.asarray(X, dtype=float)
    return 2.0 * np.asarray(B, dtype=float) * L * (E / X + F * X / np.asarray(n, dtype=float))


def wg_elems(B, L, E, F, n, N):
    """Weight-gathered over N chips: activations 2·B·L·E/N plus gathered weights 2·E·F·N/n."""
    return 2.0 * np.asarray(B, dtype=float) * L * E / N + 2.0 * E * F * np.asarray(N, dtype=float) / n


def wg_best_n(B, L, F, n):
    """The weight-gathered group that balances the two terms: N = sqrt(B·L·n/F)."""
    return np.sqrt(np.asarray(B, dtype=float) * L * n / F)


def layout_elems(B, L, E, F, torus=TORUS_64):
    """Per-chip elements per layer of every layout in ``LAYOUTS`` (stacked on the first axis)."""
    n = float(np.prod(torus))
    N = np.cumprod(torus).astype(float)
    return np.stack(np.broadcast_arrays(ws1d_elems(B, L, E, F, n), ws2d_elems(B, L, E, F, n),
                                        *(wg_elems(B, L, E, F, n, N[i]) for i in range(3))))


def best_layout(B, L, E, F, torus=TORUS_64):
    """Index into LAYOUTS of the cheapest feed-forward layout (the paper's rule: WS for decode, WG for big prefill)."""
    return np.argmin(layout_elems(B, L, E, F, torus), axis=0)


def attention_elems(kind: str, B, L, H, d_head, n):
    """Per-chip elements moved by the attention layout per layer: head-sharded 0, batch-sharded the all-to-all."""
    if kind == "head":
        return 0.0 * np.asarray(B, dtype=float)
    if kind == "batch":
        return 2.0 * np.asarray(B, dtype=float) * L * H * d_head / n
    raise ValueError(f"attention layout {kind!r}; allowed: head, batch")


def comm_s(elems, bytes_per_elem, ici_bytes_per_s):
    """Pope §2: a collective costs its bytes over the chip's network bandwidth, whatever the group size."""
    return np.asarray(elems, dtype=float) * bytes_per_elem / ici_bytes_per_s


# ---- Table 1 ------------------------------------------------------------------------------------------


def palm_variant(heads: int, kv_heads: int, head_dim: int, base: str = "paper--palm-540b"):
    """PaLM with its heads changed (the paper pads 48 -> 64 heads to partition over 64 chips)."""
    d = loader.config_dict(base)
    d.update(num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim)
    return loader.model_from_dict(d, f"{base.partition('--')[2]}-{heads}x{head_dim}-kv{kv_heads}")


@dataclass(frozen=True)
class Table1Row:
    variant: str
    d_head: int
    batch: int
    max_context: float
    paper: int

    @property
    def error(self) -> float:
        return self.max_context / self.paper - 1.0


def max_context(m, plans: Layout, batch, hardware: str = "tpu-v4-pod-slice-64", kv_fraction: float = 0.3,
                kv_dtype: str = "bf16"):
    """Longest context whose KV fits in ``kv_fraction`` of each chip's HBM under ``plans`` (KV linear in context:
    the engine's KV bytes per chip at a context of one position, scaled)."""
    hw = loader.hardware(hardware)
    w = Deployment(m, hw, plans, kv_dtype=kv_dtype).work(batch, 1.0)
    return kv_fraction * hw.hbm_bytes / np.asarray(w.kv_bytes_per_chip)


def table1(chips: int = 64) -> list[Table1Row]:
    """Max context for PaLM 540B on 64 TPU v4: multihead (64 x 128, head-sharded), multiquery head-sharded
    (K/V replicated) and multiquery batch-sharded (KV split over all chips)."""
    mh, mq = palm_variant(64, 64, 128), palm_variant(64, 1, 256)
    cases = (("multihead", mh, 128, False), ("baseline multiquery", mq, 256, False),
             ("optimized multiquery", mq, 256, True))
    rows = []
    for name, m, d_head, batch_sharded in cases:
        for B in (128, 512):
            c = float(max_context(m, Layout(tp=chips, kv_batch=batch_sharded), B))
            rows.append(Table1Row(name, d_head, B, c, TABLE1_PAPER[name][B]))
    return rows


def crossover_n(E, F) -> float:
    """2D beats 1D weight-stationary when 4·B·L·sqrt(E·F/n) < 2·B·L·E, i.e. n > 4·F/E (16 at F = 4E)."""
    return 4.0 * F / E


def wg_crossover_tokens(E, F, torus=TORUS_64) -> float:
    """Smallest tokens per batch (B·L, powers of two) at which a weight-gathered layout beats 2D weight-stationary."""
    BL = 2.0 ** np.arange(0, 31)
    best = best_layout(BL, 1.0, E, F, torus)
    wins = np.nonzero(best >= 2)[0]
    return float(BL[wins[0]]) if wins.size else math.inf
