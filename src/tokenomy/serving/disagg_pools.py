"""The two pools of disaggregated serving (serving/disagg.py), each sized and timed alone: the decode pool (what it
holds, its step at every batch, its rate at a load) and the prefill pool (its pass at every batch of prompts, its
capacity); a pool that cannot hold its work is refused by name (PoolDoesNotFit).

The pools' default layouts, sized for each other (neither idles):
    decode pool   of the layouts over its D chips that the decode search ranks first at the running batches it
                  must hold, B0 = min(U, max_batch·D) (closed loop; open loop B0 = λ·OSL·TPOT(1)) and its halvings,
                  objectives.DECODE_POOL picks on the pool alone (answers/pools.py), ``decode_load``
                  at each load point: holding the load (open loop λ < mu_d; closed loop U <= B_cap) at the most
                  points, then the shortest time in the pool (OSL·TPOT, + a closed loop's wait for a slot), then the
                  most requests/s — not the shortest step, which had put DeepSeek-V3 on 16 GB200 at 10 req/s of
                  4096/1024 on tp16 (mu_d 6.97 req/s) beside a tp1 ep16 attention-DP pool serving them at 16.6 ms
                  TPOT; plan_disagg chooses it at each load point (a plan of its own). Its rate
                  X_d = min(U / (OSL·TPOT(min(U, B_cap))), mu_d) (closed) or min(λ, mu_d) (open)
    prefill pool  it must take the prompts the decode pool's rate implies: X_d requests/s, X_d·I tokens/s — not
                  the floor(N/I) prompts of one scheduler step. Over every valid layout l of its P chips, with
                  b_max(l) = ranks(l)·max(1, floor(N/I)) prompts a pass and t_l(b) the prefill-only pass of b
                  prompts (engine; b on a 1.5x grid):
                      mu_l = b_max(l) / t_l(b_max(l))            capacity, requests/s
                      b*_l = min{b : b >= X_d·t_l(b)}            the pass the rate fills (prompts arriving meanwhile)
                  the layout with mu_l >= X_d and the shortest t_l(b*_l) (its TTFT share 1.5·t_l(b*)); when none
                  keeps up, the one with the largest mu_l (objectives.PREFILL_POOL, answers/pools.py; b_max here ignores the
                  KV cap at ISL: checked_capacity applies it).
    split         plan_disagg pairs each decode pool D with the smallest prefill pool P whose mu >= X_d (and the
                  next sizes up, for TTFT headroom): a smaller P starves the decode pool, a larger one idles
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.scheduler import (EngineProfile, kv_sequences, kv_tokens, scheduler_ranks, sequences_held,
                                        step_time)
from tokenomy.serving.workload import prefill_context, prefill_tokens
from tokenomy.units import fmt_bytes


class PoolDoesNotFit(ValueError):
    """A pool that cannot hold its work: the message names the pool and what it needs; ``pool`` its name."""

    def __init__(self, pool: str, msg: str) -> None:
        super().__init__(msg)
        self.pool = pool


def _fits(name: str, dep: Deployment, prof: EngineProfile, tokens: float, r, kv=None) -> None:
    """Refuse a pool whose pass does not fit or whose KV cannot hold one ``tokens``-token sequence (``kv``:
    kv_tokens(dep, prof, tokens) when already computed)."""
    if int(np.ravel(r.reason)[0]) != 0:
        raise PoolDoesNotFit(name, f"does not fit: {name} pool ({dep.layout.label()} on {dep.chips} chips): "
                             f"{engine.REASONS[int(np.ravel(r.reason)[0])]}; it needs "
                             f"{fmt_bytes(float(np.ravel(r.memory_per_chip_bytes)[0]))} per chip of "
                             f"{fmt_bytes(float(np.ravel(r.hbm_bytes)[0]))}")
    kv = kv if kv is not None else kv_tokens(dep, prof, tokens)
    free, need = float(kv.free_bytes), float(kv.bytes_per_token * kv.slots) * tokens  # a lone sequence on its chips
    if float(free) < need:
        raise PoolDoesNotFit(name, f"does not fit: {name} pool ({dep.layout.label()} on {dep.chips} chips) needs KV for one "
                             f"{tokens:g}-token sequence, {fmt_bytes(need)} per chip > {fmt_bytes(max(float(free), 0))} "
                             f"left after weights and activations under {prof.name}'s {prof.hbm_fraction:g} HBM share")


@dataclass(frozen=True)
class DecodePool:
    """The decode pool's fixed terms: what it holds, its step at every whole batch, its capacity."""

    context: float  # ISL + OSL/2
    seq_tokens: float  # ISL + OSL rounded up to KV blocks
    cap: float  # B_cap = min(B_kv, decode_slots)
    kv_tokens: float  # KV capacity per DP replica, tokens
    capacity: float  # mu_d = B_cap / (OSL·TPOT(B_cap)), requests/s
    batches: np.ndarray  # 1..ceil(B_cap)
    step_s: np.ndarray  # TPOT at each


def decode_slots(prof: EngineProfile, layout) -> float:
    """The most sequences a decode pool runs whatever its KV: max_batch per scheduler, and no more than the
    scheduler's token budget N (a decode-only step carries one token a sequence), over scheduler_ranks schedulers."""
    return float(min(prof.max_batch, prof.max_num_tokens)) * float(scheduler_ranks(layout))


def decode_pool(dec: Deployment, prof_d: EngineProfile, isl: float, osl: float) -> DecodePool:
    """The decode pool's terms (module docstring); raises PoolDoesNotFit naming the decode pool."""
    ctx = isl + osl / 2.0
    L_d = float(np.ceil((isl + osl) / prof_d.block_size) * prof_d.block_size)
    b_kv = float(sequences_held(dec, prof_d, isl, osl))
    cap = min(b_kv, decode_slots(prof_d, dec.layout))
    _, r_d0 = step_time(dec, float(dec.layout.dp), ctx, terms=True)  # one sequence per replica
    kv = kv_tokens(dec, prof_d, L_d)
    _fits("decode", dec, prof_d, L_d, r_d0, kv)
    Bg = np.arange(1.0, np.ceil(cap) + 1.0)
    tg = np.asarray(step_time(dec, Bg, ctx), float)
    t_cap = float(np.interp(cap, Bg, tg))
    return DecodePool(ctx, L_d, cap, float(kv[0]), cap / (osl * t_cap), Bg, tg)


def decode_rate(pool: DecodePool, osl: float, concurrency=None, rate=None) -> float:
    """X_d, the request rate the decode pool runs at the busiest load point (module docstring), requests/s."""
    return float(np.max(decode_load(pool, osl, concurrency, rate).requests_per_s))


@dataclass(frozen=True)
class DecodeLoad:
    """The decode pool alone at each load point (``decode_load``), arrays over the points."""

    holds: np.ndarray  # the pool holds the load: an open loop's rate below mu_d, a closed loop's users within B_cap
    tpot_s: np.ndarray  # t(B)
    requests_per_s: np.ndarray  # X
    decode_s: np.ndarray  # a request's time in the pool: OSL·TPOT, + the wait for a slot (U/X closed, inf open)


def decode_load(pool: DecodePool, osl: float, concurrency=None, rate=None) -> DecodeLoad:
    """The decode pool alone at each load point (the module docstring's decode pool, no prefill pool). Open loop:
    holds where λ < mu_d; X = min(λ, mu_d); B the least fixed point of B = X·OSL·t(B) in [1, B_cap] (Little's law:
    the root on the pool's table of whole batches, exact as t is linear between them); decode_s = OSL·t(B), inf
    where the queue grows without bound. Closed loop: holds where U <= B_cap (no user waits for a slot);
    B = min(U, B_cap), X = min(U/(OSL·t(B)), mu_d), decode_s = U/X (Little's law: OSL·t(B) + the wait for a slot)."""
    Bg, tg = pool.batches, pool.step_s
    if concurrency is not None:
        U = np.atleast_1d(np.asarray(concurrency, float))
        tpot = np.interp(np.minimum(U, pool.cap), Bg, tg)
        X = np.minimum(U / (osl * tpot), pool.capacity)
        return DecodeLoad(U <= pool.cap, tpot, X, U / X)
    lam = np.atleast_1d(np.asarray(rate, float))
    X = np.minimum(lam, pool.capacity)
    gap = Bg[None, :] - (X * osl)[:, None] * tg[None, :]  # B − X·OSL·t(B) on the table, >= 0 from the root on
    past = gap >= 0.0
    j = np.argmax(past, axis=1)  # the first whole batch at or past the root
    lo = np.maximum(j - 1, 0)
    g0, g1 = np.take_along_axis(gap, lo[:, None], 1)[:, 0], np.take_along_axis(gap, j[:, None], 1)[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        B = np.where(j > 0, Bg[lo] + (Bg[j] - Bg[lo]) * g0 / (g0 - g1), Bg[j])  # g0 < 0 <= g1 where j > 0
    B = np.clip(np.where(past.any(axis=1), B, pool.cap), 1.0, pool.cap)  # no root: the pool runs full
    tpot, holds = np.interp(B, Bg, tg), lam < pool.capacity
    return DecodeLoad(holds, tpot, X, np.where(holds, osl * tpot, np.inf))


PROMPT_GRID = (1.0, 1.5)  # prompts per pass tried: powers of two and 1.5x between them, then each layout's b_max


@dataclass(frozen=True)
class PrefillTable:
    """Every valid layout of a prefill pool and its pass time at a grid of prompts per pass (module docstring)."""

    layouts: Layout  # flat, shape (L,)
    b_max: np.ndarray  # (L,) prompts per pass at most (scheduler ranks x floor(N/I))
    grid: np.ndarray  # (G,) prompts per pass
    pass_s: np.ndarray  # (L, G) t_l(b); nan above b_max or where the pass does not fit
    capacity: np.ndarray  # (L,) mu_l = b_max / t_l(b_max); 0 where the layout is not valid
    checked: dict = field(default_factory=dict)  # layout index -> mu with the engine's KV share, or why it fails
    terms: dict = field(default_factory=dict)  # layout label -> _prefill_terms (for disagg's ``prefill``)


def prefill_table(dep: Deployment, prof: EngineProfile, chips: int, isl: float, cache_hit: float = 0.0
                  ) -> PrefillTable:
    """The pass of b prompts (a prefill-only step, as disagg times it) for every valid layout of ``chips`` chips."""
    from tokenomy.parallel.search import _column, candidate_layouts

    I = float(prefill_tokens(isl, cache_hit))
    pctx = prefill_context(isl, cache_hit, I)
    lay = candidate_layouts(dep.shape, chips, dep.topo.domain_size, exact=True)
    ranks = scheduler_ranks(lay)
    b_max = (ranks * max(1.0, np.floor(prof.max_num_tokens / I))).astype(float)
    top = float(np.max(b_max)) if b_max.size else 1.0
    g = np.unique(np.concatenate([m * 2.0 ** np.arange(0, np.log2(top) + 1) for m in PROMPT_GRID]))
    grid = g[g <= top]
    col = _column(lay)
    run = dep.with_(layout=col).run
    dp = np.asarray(lay.dp, float)[:, None]
    # a prompt runs on one replica and one attention rank (prefill_pass_s)
    r = run(dp, 1.0, prefill_tokens=_busiest_tokens(grid[None, :], dp, I), prefill_context=pctx, prefill_chunk=I)
    at_max = run(dp, 1.0, prefill_tokens=_busiest_tokens(b_max[:, None], dp, I), prefill_context=pctx,
                 prefill_chunk=I)
    ok_max = np.ravel(at_max.reason == 0)
    t = np.where((r.reason == 0) & (grid[None, :] <= b_max[:, None]), r.step_s, np.nan)
    cap = np.where(ok_max, b_max / np.where(ok_max, np.ravel(at_max.step_s), 1.0), 0.0)
    return PrefillTable(lay, b_max, grid, t, cap)


def prefill_columns(table: PrefillTable, rate: float) -> dict:
    """answers.objectives.PREFILL_POOL's columns over the table's layouts at ``rate`` requests/s (module
    docstring): runs (capacity > 0), keeps_up (mu_l >= rate), fill_pass_s (t_l(b*_l) where it keeps up, else
    inf), capacity_requests_per_s (mu_l)."""
    t = table.pass_s
    filled = (table.grid[None, :] >= rate * t) & np.isfinite(t)  # b >= X·t(b): the pass the rate fills
    first = np.argmax(filled, axis=1)
    t_star = np.where(filled.any(axis=1), np.take_along_axis(np.nan_to_num(t, nan=np.inf), first[:, None], 1)[:, 0],
                      np.inf)
    keeps = table.capacity >= rate
    return {"runs": table.capacity > 0, "keeps_up": keeps, "fill_pass_s": np.where(keeps, t_star, np.inf),
            "capacity_requests_per_s": table.capacity}


def checked_capacity(dep: Deployment, profile_of, table: PrefillTable, i: int, isl: float,
                     cache_hit: float = 0.0) -> float | str:
    """Layout ``i``'s capacity as disagg applies it with the engine's HBM share (KV for one ISL prompt; b_max
    capped by the KV at ISL), or why it does not fit; kept in the table (it does not depend on the rate)."""
    if i not in table.checked:
        lay = table.layouts.at((np.size(table.b_max),), i)
        try:
            terms = _prefill_terms(dep.with_(layout=lay), profile_of(int(lay.tp)), isl, cache_hit)
            table.checked[i] = terms[2] / terms[3]
            table.terms[lay.label()] = terms
        except PoolDoesNotFit as e:
            table.checked[i] = str(e)
    return table.checked[i]


def prefill_pass_s(pre: Deployment, prompts, I: float, pctx: float, *, terms: bool = False):
    """Seconds of a prefill-only pass of ``prompts`` prompts of I tokens on the pool: a prompt runs on one replica,
    so the busiest of dp carries ceil(b/dp) of them (serving.replicas), and under attention-DP a rank at least one
    whole prompt (engine.batched prefill_chunk) — not b·I spread over every replica and rank (Qwen3-32B 8000/500 on a
    tp1 dp4 prefill pool had put one prompt at 0.23 s against 0.80 s on one chip)."""
    busiest = _busiest_tokens(np.asarray(prompts, float), float(pre.layout.dp), I)
    return step_time(pre, 0.0, 1.0, busiest, pctx, terms=terms, chunk_tokens=I)


def _busiest_tokens(prompts, dp, I: float):
    """The pass's prefill tokens as the engine spreads them over dp replicas, so that the busiest carries its
    ceil(b/dp) whole prompts: ceil(b/dp)·dp·I."""
    return np.ceil(prompts / dp) * dp * I


def _prefill_terms(pre: Deployment, prof_p: EngineProfile, isl: float, cache_hit: float):
    """(I, prefill context, b_max, t_p(b_max), its PassTerms): the prefill pool's pass at its most prompts."""
    I = float(prefill_tokens(isl, cache_hit))
    pctx = prefill_context(isl, cache_hit, I)
    blk = prof_p.block_size
    kv = kv_tokens(pre, prof_p, np.ceil(isl / blk) * blk)
    per_rank = max(1.0, np.floor(prof_p.max_num_tokens / I))
    ranks_p = float(scheduler_ranks(pre.layout))
    by_kv = float(kv_sequences(pre, kv, np.ceil(isl / blk) * blk))
    b_max = max(min(per_rank * ranks_p, by_kv), 1.0)
    t_max, r_p = prefill_pass_s(pre, b_max, I, pctx, terms=True)
    _fits("prefill", pre, prof_p, float(np.ceil(isl / blk) * blk), r_p, kv)
    return I, pctx, b_max, float(t_max)


def prefill_capacity(pre: Deployment, prof_p: EngineProfile, isl: float, cache_hit: float = 0.0) -> float:
    """mu_p = b_max / t_p(b_max) requests/s, as disagg computes it; raises PoolDoesNotFit naming the prefill pool."""
    _, _, b_max, t_max = _prefill_terms(pre, prof_p, isl, cache_hit)
    return b_max / t_max
