"""Which cached positions an attention layer keeps and attends: one formula per attention kind, vectorised.

For a sequence whose context (cached + new) is C positions, a layer with sliding window w (inf: none), compression
ratio r (DeepSeek-V4: beyond the raw window, one compressed entry per r tokens; None: none), chunk c (Llama-4
chunked local attention: a token sees only the positions of its own c-token chunk) and top-k k (DeepSeek-V3.2 DSA:
a lightweight indexer scores every cached entry, the core attends only the k best) caches
    P(C) = min(C, w) + C/r               (chunked: min(C, c); the cache never holds more than one chunk)
entries, and the j-th of S new tokens attends
    A = min(k, a_j),  a_j = min(C − S + j, w) + (C − S + j)/r      (chunked: ((C − S + j − 1) mod c) + 1)
of them; ``attended`` is the mean of A over the S new tokens (for top-k, the min with the mean: exact when every
a_j is on one side of k). Sources: Beltagy et al. 2020 (sliding window), Meta's Llama-4 model card (chunked
attention, attention_chunk_size), DeepSeek-V3.2-Exp report (DSA, index_topk), DeepSeek-V4 config compress_ratios.
"""

from __future__ import annotations

import numpy as np


def _f(x):
    return np.asarray(x, dtype=float)


def _chunk_sum(n, c):
    """Σ_{x=1}^{n} (((x − 1) mod c) + 1): q whole chunks of c(c+1)/2 and a partial one of r(r+1)/2."""
    n = np.maximum(_f(n), 0.0)
    c = np.where(np.isfinite(c), c, 1.0)  # unchunked layers take the other branch of ``attended``
    q, r = np.floor(n / c), np.mod(n, c)
    return q * c * (c + 1.0) / 2.0 + r * (r + 1.0) / 2.0


def _window_sum(lo, hi, w):
    """Σ_{x=lo}^{hi} min(x, w) for integer-valued lo <= hi (w may be inf)."""
    top = np.minimum(hi, w)
    below = np.where(top >= lo, (lo + top) * (top - lo + 1.0) / 2.0, 0.0)
    above = np.where(np.isfinite(w), np.maximum(hi - np.maximum(lo - 1.0, w), 0.0) * np.where(np.isfinite(w), w, 0.0),
                     0.0)
    return below + above


def cached(C, window=np.inf, ratio=0.0, chunk=np.inf):
    """Entries one sequence of context C keeps in this layer's cache: min(C, w) + C·ρ (ρ = 1/r; chunked min(C, c))."""
    C = _f(C)
    return np.where(np.isfinite(chunk), np.minimum(C, chunk), np.minimum(C, window) + C * ratio)


def attended(C, S, window=np.inf, ratio=0.0, chunk=np.inf, topk=np.inf):
    """Mean entries a new token attends over the S new tokens of a pass (module docstring)."""
    C, S = _f(C), _f(S)
    lo = C - S + 1.0
    plain = (_window_sum(lo, C, window) + ratio * (lo + C) * S / 2.0) / S
    cyc = np.where(np.isfinite(chunk), (_chunk_sum(C, chunk) - _chunk_sum(lo - 1.0, chunk)) / S, 0.0)
    return np.minimum(np.where(np.isfinite(chunk), cyc, plain), topk)
