"""The step table the session simulator times its steps on: the engine's grid (sim_table.StepTable) over a session
plan's lengths, its prefill context the positions the turns' computed tokens attend, its cells past the KV pool
continued linearly (sessions share prefixes the engine's unshared pass counts twice)."""

from __future__ import annotations

import math

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.scheduler import EngineProfile, rank_chunk
from tokenomy.serving.sessions import SessionPlan
from tokenomy.serving.sim_table import P_GRID, StepTable


def prefill_s_per_token(table: StepTable, ctx: float) -> float:
    """The engine's prefill seconds per token at context ``ctx``: a full-budget prefill step over its tokens."""
    return table(0, ctx, table.budget) / table.budget


def step_table(dep: Deployment, prof: EngineProfile, plan: SessionPlan, n_max: int, budget: int) -> StepTable:
    isl, osl = plan.isl.astype(float), plan.osl.astype(float)
    chunk = rank_chunk(dep, prof, float(np.mean(new_tokens(plan))))
    cells = P_GRID if chunk is None else max(P_GRID, min(math.ceil(2.0 * budget / float(chunk)), 128))
    tab = StepTable.for_deployment(dep, n_max, budget, float(np.min(isl)), float(np.max(isl + osl)),
                                   prefill_context_tokens(plan), p_cells=cells, chunk_tokens=chunk)
    first = None if tab.first is None else _extrapolated(tab.first[:, None, :])[:, 0, :]
    return StepTable(_extrapolated(tab.t), tab.budget, tab.c_lo, tab.dc, first)


def new_tokens(plan: SessionPlan) -> np.ndarray:
    """Per request: the tokens it brings, u = ISL − (system prompt + forks above it + its agent's context before
    it), the prompt tokens it computes when everything before them is cached (at least 1)."""
    return np.maximum(plan.isl - base_tokens(plan) - plan.ctx_before, 1).astype(float)


def prefill_context_tokens(plan: SessionPlan) -> float:
    """The step table's prefill context (the positions a computed prompt token attends): a turn computes its new
    tokens u and finds the rest cached, so they attend ISL − u/2 on average (workload.prefill_context); over the
    plan, weighted by the tokens each turn computes, Σ u·(ISL − u/2) / Σ u. Counting the system prompt and the
    fork as computed ((ISL − ctx)/2 + ctx) put an agentic plan's at 12.5k for 17.8k tokens (the simulator's own
    hits give 17.9k: tests/serving/test_session_solve.py) and its TTFT ~10% under the analytic steady state's."""
    u, isl = new_tokens(plan), plan.isl.astype(float)
    return float(np.sum(u * (isl - u / 2.0)) / np.sum(u))


def _extrapolated(t: np.ndarray) -> np.ndarray:
    """The grid's cells of n decodes at a context whose KV would overflow the pool (the engine answers inf there)
    continued linearly in context from the last two finite cells: sessions mix long and short contexts, so n
    decodes at their MEAN context can sit beside such a cell, and interpolating into inf gives NaN seconds.
    Then the rows of n decodes that overflow at every context — they still run when they share prefixes (the block
    pool counts a shared block once; the engine's pass does not) — continued linearly in n from the last two
    finite rows (a decode step's KV read grows linearly in n); else an infinite step and its NaN slope stop the
    clock (an open loop of agentic sessions waited forever)."""
    return _continued(_continued(np.array(t, float), axis=2), axis=0)


def _continued(t: np.ndarray, axis: int) -> np.ndarray:
    """Non-finite cells along ``axis`` replaced by the linear continuation of the two cells before them (the one
    before, where only one is; the first cell is left as it is)."""
    v = np.moveaxis(t, axis, 0)  # a view: writing it writes t
    for c in range(1, v.shape[0]):
        bad = ~np.isfinite(v[c])
        if not bad.any():
            continue
        slope = 0.0
        if c >= 2:
            with np.errstate(invalid="ignore"):
                slope = np.nan_to_num(v[c - 1] - v[c - 2], nan=0.0, posinf=0.0, neginf=0.0)
        v[c] = np.where(bad, v[c - 1] + slope, v[c])
    return t


def base_tokens(plan: SessionPlan) -> np.ndarray:
    """Per request: the tokens before its agent's own object (system prompt + the forks above it)."""
    base = np.zeros(len(plan.parent), np.int64)
    for a in range(len(plan.parent)):
        p = plan.parent[a]
        base[a] = (base[p] + plan.fork_tokens[a]) if p >= 0 else 0
    return plan.system_tokens + base[plan.agent]
