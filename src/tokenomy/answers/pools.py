"""The disaggregated pools' default layouts (serving.disagg's docstring says how they are sized for each other).

    decode pool   objectives.DECODE_POOL over the layouts the decode search ranks first at the running batches the
                  pool must hold (B0 = min(U, max_batch·D), open loop Little's law λ·OSL·TPOT(1), and B0's
                  halvings), each evaluated on the pool alone (serving.disagg.decode_load at every load point)
    prefill pool  objectives.PREFILL_POOL over every valid layout of its chips at the decode pool's rate
                  (serving.disagg.prefill_table, prefill_columns), the ranked ones checked in order against the
                  engine's KV share (checked_capacity) until one keeps up or CHOICES_CHECKED past those that fit
Layouts given (a pool's degrees) are checked and kept. The step alone had put DeepSeek-V3 on 16 GB200 at 10 req/s
of 4096/1024 on tp16 (capacity 6.97 req/s) beside tp1 ep16 attention-DP, which serves them at 16.6 ms TPOT.
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers import objectives
from tokenomy.answers.layout_search import USABLE_CHECKS, ranked_layouts
from tokenomy.answers.objectives import DECODE_POOL, PREFILL_POOL
from tokenomy.answers.passes import check_layout
from tokenomy.answers.requests import EngineRequest, PoolRequest, WorkloadRequest
from tokenomy.answers.serve_layout import RANKED_FIRST
from tokenomy.serving.disagg import (PoolDoesNotFit, checked_capacity, decode_load, decode_pool, prefill_columns,
                                     prefill_table)

POOL_FIELDS = "{pool}_tp, {pool}_ep, {pool}_pp, {pool}_dp"  # a pool's degrees, as an error names them
CHOICES_CHECKED = 8  # ranked prefill layouts checked against the engine's KV share before settling


def _ranked(dep, name, chips, batch, context, len_pass) -> list:
    """The valid layouts of a pool of ``chips`` chips, best first by the decode search (layout_search
    .ranked_layouts); PoolDoesNotFit naming the pool where there is none."""
    try:
        return ranked_layouts(dep, chips, batch, context, len_pass)
    except ValueError:
        raise PoolDoesNotFit(name, f"does not fit: {name} pool has no valid layout of {dep.model.name} on {chips} "
                             "chips") from None


def decode_side(dep, pool: PoolRequest, w: WorkloadRequest, eng: EngineRequest, cache: dict):
    """The decode pool: its Deployment, profile and DecodePool terms, cached by its chips and the load points (each
    layout's terms, or why it does not fit, by chips and layout: the choice at another load reuses them)."""
    D, degrees, isl, osl = pool.chips, pool.layout, w.isl_mean, w.osl_mean

    def pool_of(lay):
        key = ("pool", D, tuple(sorted(lay.as_dict().items())))
        if key not in cache:
            dec = dep.with_(layout=lay)
            prof = eng.profile(int(lay.tp))
            try:
                cache[key] = dec, prof, decode_pool(dec, prof, isl, osl)
            except PoolDoesNotFit as e:
                cache[key] = e
        if isinstance(cache[key], PoolDoesNotFit):
            raise cache[key]
        return cache[key]

    if degrees is not None:
        if int(degrees.chips) != D:
            raise ValueError(f"decode_chips: {D} does not equal decode tp*ep*pp*dp = {int(degrees.chips)}")
        check_layout(dep, degrees, POOL_FIELDS.format(pool="decode"))
        return pool_of(degrees)
    key = ("decode", D, w.concurrency, w.rate)
    if key not in cache:
        cache[key] = _decode_choice(dep, D, w, eng, pool_of)
    return cache[key]


def _running_batches(dep, D: int, w: WorkloadRequest, cap: float) -> np.ndarray:
    """B0 (closed loop min(U, cap); open loop Little's law at the batch-1 layout's step, λ·OSL·TPOT(1)) and its
    halvings, whole sequences (a fractional batch is no layout's point: every one was refused and the search fell
    back to its first candidate, tp1 dp8 for DeepSeek-R1 on 8 H200 under --rate)."""
    U, lam, osl = w.U, w.lam, w.osl_mean
    ctx = w.isl_mean + osl / 2.0
    if U is not None:
        B0 = max(min(float(np.max(U)), cap), 1.0)
    else:
        one = dep.with_(layout=_ranked(dep, "decode", D, 1.0, ctx, 1.0)[0])
        t1 = float(one.run(float(one.layout.dp), ctx).step_s)  # nan where no layout runs a sequence: each says why
        B0 = min(max(float(np.max(lam)) * osl * t1, 1.0), cap) if np.isfinite(t1) else 1.0
    return np.unique(np.maximum(np.round(B0 / 2.0 ** np.arange(0, int(np.log2(B0)) + 1)), 1.0))


def _decode_choice(dep, D: int, w: WorkloadRequest, eng: EngineRequest, pool_of):
    """The decode pool's default layout and terms, ``pool_of(layout)``'s, by objectives.DECODE_POOL (module
    docstring); the first PoolDoesNotFit where none holds a sequence."""
    U, lam, osl = w.U, w.lam, w.osl_mean
    points = _running_batches(dep, D, w, float(eng.profile().max_batch) * D)
    ranked = _ranked(dep, "decode", D, points, w.isl_mean + osl / 2.0, 1.0)[:USABLE_CHECKS]
    n = np.size(w.load)
    pools, refused = {}, []

    def evaluate(lays) -> dict:
        cols = {"holds": [], "decode_s": [], "requests_per_s": []}
        for lay in lays:
            try:
                pools[id(lay)] = p = pool_of(lay)
                d = decode_load(p[2], osl, U, lam)
                vals = (d.holds, d.decode_s, d.requests_per_s)
            except PoolDoesNotFit as e:  # its KV share holds no sequence: below every layout that does
                refused.append(e)
                vals = (np.zeros(n), np.full(n, np.nan), np.zeros(n))
            for k, v in zip(cols, vals):
                cols[k].append(np.broadcast_to(np.asarray(v, float), (n,)))
        return {k: np.array(v) for k, v in cols.items()}

    scored, i = objectives.choose_staged(DECODE_POOL, ranked[:RANKED_FIRST], ranked[RANKED_FIRST:], evaluate)
    if id(scored[i]) not in pools:  # none holds a sequence: the search's first says why
        raise refused[0]
    return pools[id(scored[i])]


def prefill_side(dep, pool: PoolRequest, rate_d: float, w: WorkloadRequest, eng: EngineRequest, tables: dict):
    """The prefill pool for the decode pool's request rate ``rate_d``: (Deployment, profile, capacity at the
    chosen layout — or None for given degrees)."""
    P, degrees, isl, cache_hit = pool.chips, pool.layout, w.isl_mean, w.cache_hit
    mu = None
    if degrees is not None:
        if int(degrees.chips) != P:
            raise ValueError(f"prefill_chips: {P} does not equal prefill tp*ep*pp*dp = {int(degrees.chips)}")
        check_layout(dep, degrees, POOL_FIELDS.format(pool="prefill"))
        lay = degrees
    else:
        if P not in tables:
            tables[P] = prefill_table(dep, eng.profile(), P, isl, cache_hit)
        lay, mu = prefill_choice(dep, eng.profile, tables[P], rate_d, isl, cache_hit)
    return dep.with_(layout=lay), eng.profile(int(lay.tp)), mu


def prefill_choice(dep, profile_of, table, rate: float, isl: float, cache_hit: float = 0.0):
    """(layout, mu) the prefill pool runs at ``rate`` requests/s: objectives.PREFILL_POOL over the table, the
    ranked layouts checked in order with the engine's KV share (serving.disagg.checked_capacity) — the first that
    keeps up wins, else PREFILL_POOL again over the first CHOICES_CHECKED that fit, on their checked capacity.
    PoolDoesNotFit when none fits."""
    cols = prefill_columns(table, rate)
    why, seen = "no valid layout whose pass fits", []
    for k, i in enumerate(objectives.rank(PREFILL_POOL, cols)):
        if seen and k >= CHOICES_CHECKED:
            break
        mu = checked_capacity(dep, profile_of, table, i, isl, cache_hit)
        if isinstance(mu, str):
            why = mu
            continue
        seen.append((i, mu))
        if mu >= rate:
            break
    if not seen:
        raise PoolDoesNotFit("prefill", why if why.startswith("does not fit") else f"does not fit: prefill pool: {why}")
    idx = np.array([i for i, _ in seen])
    mu = np.array([m for _, m in seen])
    checked = {"runs": mu > 0, "keeps_up": mu >= rate,
               "fill_pass_s": np.where(mu >= rate, cols["fill_pass_s"][idx], np.inf), "capacity_requests_per_s": mu}
    j = objectives.choose(PREFILL_POOL, checked)
    j = 0 if j is None else j
    return table.layouts.at((np.size(table.b_max),), int(idx[j])), float(mu[j])
