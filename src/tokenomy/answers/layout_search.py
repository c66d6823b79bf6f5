"""A question's default layout over its chips, by the fastest-step objective (answers.objectives.FASTEST_STEP).

    candidates  the valid layouts using exactly the chips (parallel.search.exact_layouts)
    columns     each run through the engine at the (batch, context, len_pass) points asked (``step_columns``):
                valid (the layout itself, not a point, is valid for the model), fits (the point fits), step_s
                (where it fits), memory_share (memory per chip / usable HBM, the mean over the points)
    choice      answers.objectives.rank over those columns; decode, prefill and the economics questions take the
                first (``best_layout``), serve's and each pool's candidates are its first ones (``ranked_layouts``)
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers import objectives
from tokenomy.answers.objectives import FASTEST_STEP, TOKENS_PER_CHIP
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.engine import PassTerms
from tokenomy.core.layout import Layout
from tokenomy.parallel.search import SearchResult, exact_layouts, memory_share, run_layouts

USABLE_CHECKS = 64  # ranked layouts tried against a caller's memory rule before the search's first stands


def step_columns(r: PassTerms, each_point: bool = False) -> dict:
    """FASTEST_STEP's columns from the engine's terms [layout, point] (valid and memory_share per layout: over
    all its points; with ``each_point`` each point's, as the sweep chooses a layout for each point alone)."""
    ok = r.reason == 0
    bad = (r.reason > 0) & (r.reason < engine.FIRST_POINT_REASON)  # the layout itself is invalid
    mem = memory_share(r)
    if each_point:
        return {"valid": ~bad, "fits": ok, "step_s": np.where(ok, r.step_s, np.nan), "memory_share": mem}
    return {"valid": ~np.asarray(bad).any(axis=1), "fits": ok, "step_s": np.where(ok, r.step_s, np.nan),
            "memory_share": np.mean(mem, axis=1)}


def ranked_layouts(dep: Deployment, chips: int, batch, context, len_pass=1) -> list[Layout]:
    """The valid layouts over ``chips`` chips, best first by FASTEST_STEP at the points asked (none valid: the
    first, which says why when evaluated)."""
    P = exact_layouts(dep, chips)
    return ranked_of(P, run_layouts(dep, P, batch, context, len_pass))


def ranked_of(P: Layout, r: PassTerms) -> list[Layout]:
    """The layouts of the flat ``P`` best first by FASTEST_STEP from their engine terms ``r`` [layout, point]
    (parallel.search.run_layouts; none valid: the first)."""
    order = objectives.rank(FASTEST_STEP, step_columns(r)) or [0]
    return P.each((np.size(P.tp),), order)


def best_layout(dep: Deployment, chips: int, batch, context, len_pass=1, usable=None) -> tuple[Layout, str]:
    """The default layout of a question over ``chips`` chips at the (batch, context, len_pass) points asked, and
    the rule that chose it (FASTEST_STEP's). ``usable(layout) -> bool``: a further test the caller's memory rule
    makes (a serving engine's HBM share, which the pass's fit does not know), tried on the first USABLE_CHECKS
    ranked; the first that passes wins, else the first ranked. ValueError when no layout over ``chips`` is valid."""
    ranked = ranked_layouts(dep, chips, batch, context, len_pass)
    rule = FASTEST_STEP.rule(chips=chips)
    if usable is not None:
        lay = next((x for x in ranked[:USABLE_CHECKS] if usable(x)), None)
        if lay is not None:
            return lay, rule + ", among those whose KV share holds a sequence"
    return ranked[0], rule


def plan_best(res: SearchResult) -> int | None:
    """The plan search's best point (flat index over layouts x batches) by TOKENS_PER_CHIP; None if none is
    feasible. The most tokens/s per chip among the feasible is always on their Pareto front."""
    return objectives.choose(TOKENS_PER_CHIP, res.columns())
