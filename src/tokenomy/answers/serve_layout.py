"""serve's default layout: the best of the decode search's candidates for the workload (objectives.WORKLOAD).

    candidates  of the layouts over the chips that the decode search ranks (answers.layout_search.ranked_layouts, at
                the running batch and the mean decode context) those whose engine HBM share holds one ISL + OSL
                sequence (70B on 4 H100 at 8000/500: tp4, not a tp1 dp4 that holds none) and that are among the
                first 8, on the decode Pareto front over batches, or among the 3 quickest prompt passes
    columns     serving.steady of each candidate at every load point (``steady_columns``): meets
                (plan_serving.meets: within the SLOs, not an open loop beyond capacity), e2e_s (a closed loop's
                requests/s is C/e2e; an open loop's users wait e2e), requests_per_s (what an overloaded open loop
                still serves), ordered by objectives.WORKLOAD
    serve       the candidate best summed over the points (``layout_pick``: serve's door runs serving.steady on
                each candidate itself and keeps the chosen one's state, so the CLI reaches the engine in 6 calls
                searched or given, tests/cli/test_serve_hops.py; ``serve_layout`` where only the layout is wanted);
                the sweep's plan mode takes each point's best from one steady call per candidate over all its
                points (``per_point``)
    disagg      the decode pool's default: objectives.DECODE_POOL, the same order on the pool alone (answers
                .workloads._decode_pool_choice)
The decode step alone had ranked a pipeline first for 70B on 4 H100 at 128 users of 8000/500 (e2e 270 s against
tp4's 105 s) and tp4 dp2 for Llama-8B on 8 H100 at 50 req/s (beyond its capacity; tp1 dp8 serves it); the layouts
that serve a load best often rank 9th-50th by the decode step at one batch (Qwen3-30B-A3B on 8 H100 at 32 req/s:
tp2 ep4 attention-DP, 11th), so the decode front over all batches is scored too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tokenomy.answers import objectives
from tokenomy.answers.layout_search import USABLE_CHECKS, ranked_of
from tokenomy.answers.objectives import FASTEST_STEP, WORKLOAD
from tokenomy.answers.passes import choose_layout
from tokenomy.answers.plan_serving import meets
from tokenomy.answers.requests import EngineRequest, WorkloadRequest
from tokenomy.core.deployment import Deployment
from tokenomy.parallel.search import Constraints, default_batches, exact_layouts, run_layouts, search
from tokenomy.serving.kv_capacity import weights_leave_room
from tokenomy.serving.scheduler import kv_capacity
from tokenomy.serving.steady import Prefix, Sending, steady


def candidates(dep, chips, load_batch, isl, osl, eng: EngineRequest):
    """(first, rest, the decode search's first) of the ranked layouts (the first ``USABLE_CHECKS``) that hold one
    ISL + OSL sequence. first: the ``RANKED_FIRST`` first, those on the decode search's Pareto front over batches
    (tokens/s per chip vs per user: a layout off it is beaten at every batch by one on it) and the
    ``QUICKEST_PROMPT`` with the shortest prompt pass (the front is a decode front; TTFT may decide); rest: the
    others, scored where the best of the first misses a point (the decode front knows no KV capacity: the layouts
    that hold an open loop's load can rank 11th-50th). The decode search's first is what is chosen where none holds a
    sequence (it says why when served)."""
    n = chips or dep.hardware.num_chips
    P = exact_layouts(dep, n)
    ranked = ranked_of(P, run_layouts(dep, P, *_points(load_batch, isl, osl)))[:USABLE_CHECKS]
    cap = float(eng.max_batch or eng.profile().max_batch)
    res = search(dep, chips=n, constraints=Constraints(context=isl + osl / 2.0), batches=default_batches(cap),
                 layouts=P)  # the same exact layouts, enumerated once
    n_layouts = np.shape(res.feasible)[0]
    labels = [lay.label() for lay in res.layouts.each((n_layouts,), range(n_layouts))]
    keep = {labels[int(i) // np.size(res.batches)] for i in res.front}
    quickest = np.argsort(np.where(np.isfinite(res.ttft_s), res.ttft_s, np.inf))[:QUICKEST_PROMPT]
    keep |= {labels[int(j)] for j in quickest}
    holds = lambda lay: holds_a_sequence(dep.with_(layout=lay), eng, isl, osl)  # noqa: E731
    first, seen, usable = [], 0, 0  # ranked[:seen] checked; usable of them
    for lay in ranked:  # the first RANKED_FIRST usable, checked in order; after them, those in keep alone
        if usable >= RANKED_FIRST and lay.label() not in keep:
            continue
        seen += usable < RANKED_FIRST
        if holds(lay):
            first.append(lay)
            usable += 1
    return first, Rest(ranked[seen:], first, holds), ranked[0]


class Rest(Sequence):
    """``candidates``' rest: the ranked layouts after those checked for ``first`` that hold a sequence and are not in
    it, in order. Each is checked (holds_a_sequence: a KV capacity, three lowerings) when a stage first reads the
    rest, which is when the best of ``first`` misses a point (objectives.Staged), not for every question."""

    def __init__(self, ranked: list, first: list, holds):
        self._ranked, self._first, self._holds, self._usable = ranked, first, holds, None

    def _all(self) -> list:
        if self._usable is None:
            self._usable = [x for x in self._ranked if not any(x is y for y in self._first) and self._holds(x)]
        return self._usable

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, i):
        return self._all()[i]


RANKED_FIRST = 8  # the decode search's first layouts, always scored
QUICKEST_PROMPT = 3  # the layouts with the shortest prompt pass, always scored


OPEN_LOOP_BATCH = 64.0  # the running batch an open loop's candidates are ranked at (its load sets no batch)


def ranking_batch(concurrency, cap) -> float:
    """The running batch the decode search ranks candidates at: a closed loop's largest concurrency, an open loop's
    OPEN_LOOP_BATCH (``concurrency`` None), at most the scheduler's batch cap ``cap``."""
    return float(min(OPEN_LOOP_BATCH if concurrency is None else np.max(concurrency), cap))


def _points(load_batch, isl, osl):
    """The decode search's point: the running batch (whole sequences), the mean decode context, one new token."""
    return np.array([[max(round(float(load_batch)), 1.0)]]), np.array([[isl + osl / 2.0]]), np.ones((1, 1))


@dataclass
class LayoutPick:
    """serve's layout choice held open for its door: the candidates in stages (objectives.Staged over WORKLOAD),
    each run by the door through serving.steady at ``load`` (``pending`` -> ``staged.results``), then ``chosen``:
    the best with its rule and its steady state (not run again)."""

    dep: Deployment  # its layout ignored
    eng: EngineRequest
    load: dict  # serving.steady's keywords: isl, osl, concurrency, rate, prefix, sending
    staged: objectives.Staged
    rule: str | None  # None: WORKLOAD's, over the candidates scored

    def pending(self):
        """(the Deployment on a candidate, the engine profile at its TP) for each candidate to run, stage by stage."""
        for stage in self.staged.stages():
            for lay in stage:
                yield self.dep.with_(layout=lay), self.eng.profile(int(lay.tp))

    def chosen(self):
        """(the Deployment on the layout chosen, its engine profile, the rule, its steady state)."""
        i, scored = self.staged.best(), self.staged.scored
        lay = scored[i]
        rule = WORKLOAD.rule(n=len(scored)) if self.rule is None else self.rule
        return self.dep.with_(layout=lay), self.eng.profile(int(lay.tp)), rule, self.staged.results[i]


def layout_pick(dep, chips, degrees, w: WorkloadRequest, eng: EngineRequest, prompts=None) -> LayoutPick:
    """serve's layout choice over the load points of ``w`` (serving.steady's concurrency or rate, cache_hit,
    arrivals; its SLOs): the degrees given (one candidate); else objectives.WORKLOAD over ``candidates``, summed over
    the points; none holding a sequence: the decode search's first, which says why when served. ``prompts``: an open
    loop's run of that many requests (RunRequest.requests), steady's finite run (serving.finite_run: no more
    running than were sent, the trapezoid's mean); None: the steady state of an endless stream."""
    isl, osl = w.isl_mean, w.osl_mean
    load_batch = ranking_batch(w.U, eng.max_batch or eng.profile().max_batch)
    closed = w.U is not None
    run = Sending(w.arrivals, float(prompts) if prompts is not None and not closed else np.inf)
    load = dict(isl=isl, osl=osl, concurrency=w.U, rate=w.lam, prefix=Prefix(w.cache_hit), sending=run)

    def columns_of(states):
        return steady_columns(states, closed, w.slos)

    if degrees is not None:
        lay, rule = choose_layout(dep, chips, degrees, *_points(load_batch, isl, osl),
                                  usable=lambda x: holds_a_sequence(dep.with_(layout=x), eng, isl, osl))
        return LayoutPick(dep, eng, load, objectives.Staged(WORKLOAD, [lay], [], columns_of), rule)
    first, rest, fallback = candidates(dep, chips, load_batch, isl, osl, eng)
    if not first:
        rule = FASTEST_STEP.rule(chips=chips or dep.hardware.num_chips)
        return LayoutPick(dep, eng, load, objectives.Staged(WORKLOAD, [fallback], [], columns_of), rule)
    return LayoutPick(dep, eng, load, objectives.Staged(WORKLOAD, first, rest, columns_of), None)


def serve_layout(dep, chips, degrees, w: WorkloadRequest, eng: EngineRequest):
    """(layout, rule) of ``layout_pick``, each candidate run here (serve's door runs them itself)."""
    pick = layout_pick(dep, chips, degrees, w, eng)
    for d, prof in pick.pending():
        pick.staged.results.append(steady(d, prof, **pick.load))
    d, _, rule, _ = pick.chosen()
    return d.layout, rule


def per_point(dep, first, rest, eng: EngineRequest, isl, osl, load: dict) -> tuple[list, np.ndarray]:
    """(the layouts scored, the index of each point's best by objectives.WORKLOAD, the point alone, as
    serve_layout picks it: from ``first``, or from ``first`` + ``rest`` where the best of ``first`` misses it)."""
    evaluate = lambda lays: workload_columns(dep, lays, eng, isl, osl, load)  # noqa: E731
    return objectives.best_each_staged(WORKLOAD, first, rest, evaluate)


def workload_columns(dep, layouts, eng: EngineRequest, isl, osl, load: dict, slos=(None, None)) -> dict:
    """objectives.WORKLOAD's columns [layout, point] from serving.steady of each layout at ``load`` (its concurrency
    or rate, prefix, sending): ``steady_columns``."""
    states = [steady(dep.with_(layout=lay), eng.profile(int(lay.tp)), isl=isl, osl=osl, **load) for lay in layouts]
    return steady_columns(states, load.get("concurrency") is not None, slos)


def steady_columns(states, closed: bool, slos=(None, None)) -> dict:
    """objectives.WORKLOAD's columns [candidate, point] from the candidates' steady states: meets
    (plan_serving.meets: the SLOs and the load), e2e_s, requests_per_s."""
    meets_, e2e, rps = [], [], []
    for s in states:
        e, x = (np.ravel(np.asarray(v, float)) for v in (s.e2e_s, s.requests_per_s))
        cap = np.ravel(s.capacity_limited)
        meets_.append([meets({"capacity_limited": bool(cap[i]), "tpot_s": _num(np.ravel(s.tpot_s)[i]),
                              "ttft_s": _num(np.ravel(s.ttft_s)[i]), "concurrency": 1.0 if closed else None}, *slos)
                       for i in range(e.size)])
        e2e.append(e)
        rps.append(x)
    return {"meets": np.array(meets_, float), "e2e_s": np.array(e2e), "requests_per_s": np.array(rps)}


def _num(x):
    x = float(x)
    return None if x != x else x


def holds_a_sequence(dep, eng: EngineRequest, isl, osl) -> bool:
    """The engine's KV share on this layout holds one ISL + OSL sequence (serving.scheduler.kv_capacity; none where
    the weights alone fill the share: kv_capacity.weights_leave_room)."""
    prof = eng.profile(int(dep.layout.tp))
    return weights_leave_room(dep, prof) and bool(np.all(kv_capacity(dep, prof, isl, osl)[0] >= 1))
