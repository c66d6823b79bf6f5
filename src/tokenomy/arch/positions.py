"""Which cached entries an attention layer keeps and attends: one formula per attention kind, vectorised.

For a sequence whose context (cached + new) is C positions, a layer with sliding window w (inf: none), compression
ρ = 1/r (DeepSeek-V4: beyond the raw window, one compressed entry per r tokens; 0: none), chunk c (Llama-4 chunked
local attention: a token sees only the positions of its own c-token chunk) and top-k k (DeepSeek-V3.2 DSA: a
lightweight indexer scores every cached entry, the core attends only the k best) caches
    P(C) = min(C, w) + C·ρ               (chunked: min(C, c); the cache never holds more than one chunk)
entries, and the j-th of S new tokens attends
    a_j = min(C − S + j, w) + min(k, (C − S + j)·ρ)   with compression (top-k over the compressed entries, V4)
    a_j = min(k, min(C − S + j, w))                   without (DSA over every entry, V3.2)
    a_j = ((C − S + j − 1) mod c) + 1                 chunked
of them; ``attended`` is the mean over the S new tokens (top-k taken as the min of k with the mean: exact when
every a_j is on one side of k). The indexer scores, and caches a key for, the compressed entries when there are
any, else every cached entry (``indexed``). Sources: Beltagy et al. 2020 (sliding window), Meta's Llama-4 model card (chunked
attention, attention_chunk_size), DeepSeek-V3.2-Exp report (DSA, index_topk), DeepSeek-V4 config compress_ratios.
Counts may carry units (pint, in the dimensional tests): the unit step is one position, ``units.TOKEN``.
"""

from __future__ import annotations

import numpy as np

from tokenomy import units
from tokenomy.units import floats

_f = floats  # float arrays (a quantity keeps its units)


def _chunk_sum(n, c):
    """Σ_{x=1}^{n} (((x − 1) mod c) + 1): q whole chunks of c(c+1)/2 and a partial one of r(r+1)/2."""
    one = units.TOKEN
    n = np.maximum(n, 0.0 * one)
    c = np.where(np.isfinite(c), c, one)  # unchunked layers take the other branch of ``attended``
    q, r = np.floor(n / c), np.mod(n, c)
    return q * c * (c + one) / 2.0 + r * (r + one) / 2.0


def _window_sum(lo, hi, w):
    """Σ_{x=lo}^{hi} min(x, w) for integer-valued lo <= hi (w may be inf)."""
    one = units.TOKEN
    top = np.minimum(hi, w)
    below = np.where(top >= lo, (lo + top) * (top - lo + one) / 2.0, 0.0 * one * one)
    finite = np.isfinite(w)
    above = np.where(finite, np.maximum(hi - np.maximum(lo - one, w), 0.0 * one) * np.where(finite, w, 0.0 * one),
                     0.0 * one * one)
    return below + above


def cached(C, window=np.inf, ratio=0.0, chunk=np.inf):
    """Entries one sequence of context C keeps in this layer's cache: min(C, w) + C·ρ (chunked: min(C, c))."""
    C = _f(C)
    return np.where(np.isfinite(chunk), np.minimum(C, chunk), np.minimum(C, window) + C * ratio)


def indexed(C, window=np.inf, ratio=0.0, chunk=np.inf):
    """Entries the indexer scores (and keeps a key for): the compressed ones when the layer compresses, else all."""
    return np.where(ratio > 0, _f(C) * ratio, cached(C, window, ratio, chunk))


def _nowhere(x, absent) -> bool:
    """True when no layer class uses the feature (every value is ``absent``): its branch can be skipped."""
    return bool(np.all(x == absent))


def attended(C, S, window=np.inf, ratio=0.0, chunk=np.inf, topk=None):
    """Mean entries a new token attends over the S new tokens of a pass (module docstring; topk None: all).
    Without windows the raw sum is an arithmetic series, mean (lo + C)/2; without chunks the cyclic branch is
    not evaluated (the same values, fewer array passes: this runs on every point of every sweep)."""
    C, S = _f(C), _f(S)
    lo = C - S + units.TOKEN
    raw = (lo + C) / 2.0 if _nowhere(window, np.inf) else _window_sum(lo, C, window) / S
    compressed = ratio * (lo + C) / 2.0
    if topk is not None:
        compressed, capped = np.minimum(compressed, topk), np.minimum(raw, topk)
    else:
        capped = raw
    plain = capped if _nowhere(ratio, 0.0) else np.where(ratio > 0, raw + compressed, capped)
    if _nowhere(chunk, np.inf):
        return plain
    cyc = (_chunk_sum(C, chunk) - _chunk_sum(lo - units.TOKEN, chunk)) / S
    return np.where(np.isfinite(chunk), cyc, plain)
