"""The one place a question's layout is chosen: its objective as data, and one search over the candidates.

An ``Objective`` names what a question wants in order (``terms``, lexicographic: the first decides, ties go to the
next, remaining ties to the candidates' own order) and what a candidate must hold to be chosen at all
(``requires``). A door evaluates its candidates through the one engine (a pass, serving.steady, a pool alone) into
the columns its objective names — each [candidate] or [candidate, point] — and asks ``rank``, ``choose``,
``choose_staged`` (``Staged`` where the door runs the engine itself) or ``best_each``; no other module scores layouts (tests/unit/test_objectives.py checks both).
The rules the doors print (the title's "layout ... (rule)", ``--explain``, plan's header, the JSON
``layout_rule``/``rule``) are ``Objective.rule``: the same data, in words.

A term's value per [candidate, point] (``Term.kind``), summed over the points a candidate is chosen for:
    count     1 where the column holds (a boolean), else 0          (points that fit, meet the SLOs, hold the load)
    finite    1 where the column is a finite time > 0, else 0
    min_log   −log(column) where finite > 0, else 0                 (after ``finite``: the geometric mean, smaller)
    max_log   log(column) where finite > 0, else −1e9               (requests/s an overloaded loop still serves)
    min, max  −column / column, NaN the worst                       (a single value per candidate)
With the same count of fitting (finite) points, a sum of logs orders as their mean: "most points, then the lowest
geometric mean over them" is two terms, not a weighted blend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

KINDS = ("count", "finite", "min_log", "max_log", "min", "max")
NONE_LOG = -1e9  # max_log's value where nothing is served: below any log of a positive rate


@dataclass(frozen=True)
class Term:
    """One key of an objective: a column, how it scores (``KINDS``), and its words in the printed rule."""

    column: str
    kind: str
    words: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: {self.kind!r}; allowed: {', '.join(KINDS)}")

    def value(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        ok = np.isfinite(x) & (x > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind == "count":
                return np.where(np.isnan(x), 0.0, x != 0).astype(float)
            if self.kind == "finite":
                return ok.astype(float)
            if self.kind == "min_log":
                return np.where(ok, -np.log(np.where(ok, x, 1.0)), 0.0)
            if self.kind == "max_log":
                return np.where(ok, np.log(np.where(ok, x, 1.0)), NONE_LOG)
            return np.where(np.isnan(x), -np.inf, -x if self.kind == "min" else x)


@dataclass(frozen=True)
class Objective:
    """What a question maximises among its candidates: ``requires`` (boolean columns a candidate must hold at every
    point), then ``terms`` in order; ``rule`` says it in words (``{...}`` fields filled by the door: chips, n)."""

    name: str
    question: str  # the doors that ask it
    candidates: str  # what is searched, in words
    terms: tuple[Term, ...]
    requires: tuple[Term, ...] = ()
    otherwise: str = ""  # what is chosen when no candidate meets ``requires``

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.column for t in (*self.requires, *self.terms)))

    def rule(self, **fields) -> str:
        """The objective in words: "<candidates>: <required>, the one with <term>, then <term>, ...; <otherwise>"."""
        need = f" {' and '.join(t.words for t in self.requires)}," if self.requires else ""
        keys = ", then ".join(t.words for t in self.terms)
        text = f"of {self.candidates},{need} the one with {keys}" + (f"; {self.otherwise}" if self.otherwise else "")
        return text.format(**fields)


def _t(column, kind, words):
    return Term(column, kind, words)


FASTEST_STEP = Objective(
    "fastest-step", "decode, prefill, batch/latency/context/pricing/speculate/cache, sweep (pass, plan mode)",
    "the layouts over all {chips} chips",
    (_t("fits", "count", "the most of the requested points fitting"),
     _t("step_s", "min_log", "the lowest geometric-mean step time over them (= most tokens/s per chip)"),
     _t("memory_share", "min", "the lowest memory share (nearest to fitting where none fits)")),
    (_t("valid", "count", "each a valid layout for the model"),), "none valid: the first, which says why")
TOKENS_PER_CHIP = Objective(
    "tokens-per-chip", "plan (the bare layout search)", "every valid layout x batch on at most {chips} chips",
    (_t("tokens_per_s_per_chip", "max", "the most tokens/s per chip"),
     _t("tokens_per_s_per_user", "max", "ties: the most tokens/s per user")),
    (_t("feasible", "count", "fitting, at or above the tokens/s-per-user floor and within the TTFT limit"),),
    "none feasible: no plan")
WORKLOAD = Objective(
    "workload", "serve (aggregated), sweep (serving, plan mode)",
    "the {n} layout(s) the decode search ranks that hold a sequence",
    (_t("meets", "count", "the SLOs (and the load) met at the most points"),
     _t("e2e_s", "finite", "a finite end-to-end latency at the most points"),
     _t("e2e_s", "min_log", "the lowest geometric-mean end-to-end latency (in a closed loop: the most requests/s)"),
     _t("requests_per_s", "max_log", "the most requests/s served")),
    (), "none holding a sequence: the decode search's first, which says why")
DECODE_POOL = Objective(
    "decode-pool", "serve and plan (disaggregated): the decode pool", "the {n} layout(s) of the decode pool the "
    "decode search ranks first at the running batches it must hold",
    (_t("holds", "count", "the load held (open loop: under the pool's capacity; closed loop: within its batch cap) "
        "at the most points"),
     _t("decode_s", "finite", "a finite time in the pool at the most points"),
     _t("decode_s", "min_log", "the shortest geometric-mean time in the pool (OSL x TPOT + a closed loop's wait)"),
     _t("requests_per_s", "max_log", "the most requests/s")),
    (), "none holding a sequence: the pool does not fit")
PREFILL_POOL = Objective(
    "prefill-pool", "serve and plan (disaggregated): the prefill pool", "the valid layouts of the prefill pool",
    (_t("keeps_up", "count", "capacity at or above the decode pool's rate"),
     _t("fill_pass_s", "min", "the shortest pass of the prompts the rate fills (its TTFT share)"),
     _t("capacity_requests_per_s", "max", "the most capacity")),
    (_t("runs", "count", "whose pass fits"),), "none whose pass fits: the pool does not fit")

FASTEST_TRAIN_STEP = Objective(
    "fastest-train-step", "train --search", "the training layouts (tp, cp, pp, dp, ep, pipeline schedule) over "
    "{chips} chips, each with the cheapest recompute that fits",
    (_t("step_s", "min", "the shortest training step"),),
    (_t("fits", "count", "fitting in memory"),), "none fitting: refused, naming the chips")


def _serving_plan(name, column, words):
    return Objective(name, "plan (serving: aggregated layouts, disaggregated pool splits)",
                     "the plans evaluated at the workload points",
                     (_t(column, "max", words), _t("tokens_per_s_per_user", "max", "ties: more tokens/s per user")),
                     (_t("meets_slos", "count", "meeting the SLOs (TTFT <= TTFT SLO, TPOT <= TPOT SLO, not an open "
                         "loop beyond capacity)"),), "none meeting: the closest, by how much it misses")


GOODPUT_PER_USD = _serving_plan("goodput-per-usd", "goodput_requests_per_usd", "the most goodput per dollar (goodput "
                                "requests/s x 3600 / (chips x $/chip-hour))")
TOKENS_PER_JOULE = _serving_plan("tokens-per-joule", "goodput_tokens_per_joule", "the most SLO-meeting output tokens "
                                 "per all-in joule (goodput requests/s x OSL / (chips x all-in W per chip), "
                                 "econ/energy.py)")
TCO = _serving_plan("tco", "goodput_requests_per_usd_tco", "the most goodput per dollar of ownership (goodput "
                    "requests/s x 3600 / (chips x TCO $/chip-hour), econ/tco.py)")

OBJECTIVES = {o.name: o for o in (FASTEST_STEP, TOKENS_PER_CHIP, WORKLOAD, DECODE_POOL, PREFILL_POOL,
                                  FASTEST_TRAIN_STEP, GOODPUT_PER_USD, TOKENS_PER_JOULE, TCO)}
PLAN_OBJECTIVES = {o.name: o for o in (GOODPUT_PER_USD, TOKENS_PER_JOULE, TCO)}  # plan --objective's choices
DEFAULT_PLAN_OBJECTIVE = GOODPUT_PER_USD.name


def plan_objective(name: str | None) -> Objective:
    """plan's ``objective`` by name (None: goodput per dollar)."""
    if name is None:
        return GOODPUT_PER_USD
    if name not in PLAN_OBJECTIVES:
        raise ValueError(f"objective: {name!r}; allowed: {', '.join(PLAN_OBJECTIVES)}")
    return PLAN_OBJECTIVES[name]


def scores(obj: Objective, columns: dict, each_point: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(allowed [candidate], keys [candidate, term]) — each column [candidate] or [candidate, point], summed over
    the points; ``each_point``: ([candidate, point], [candidate, point, term]), each point alone."""
    missing = [c for c in obj.columns if c not in columns]
    if missing:
        raise KeyError(f"objective {obj.name}: columns {', '.join(missing)} not given")
    cols = {k: np.asarray(columns[k], dtype=float) for k in obj.columns}
    cols = {k: v[:, None] if v.ndim == 1 else v for k, v in cols.items()}  # [candidate]: the same at every point
    shape = np.broadcast_shapes(*(v.shape for v in cols.values()))
    ok = np.ones(shape, bool)
    for t in obj.requires:
        ok &= t.value(cols[t.column]) > 0
    keys = np.stack([np.broadcast_to(t.value(cols[t.column]), shape) for t in obj.terms], -1)
    if each_point:
        return ok, keys
    return ok.all(axis=1), keys.sum(axis=1)


def rank(obj: Objective, columns: dict) -> list[int]:
    """The candidates allowed by ``obj.requires``, best first by its terms (ties: the candidates' own order)."""
    ok, keys = scores(obj, columns)
    order = np.lexsort(tuple(-keys[:, k] for k in reversed(range(keys.shape[1]))))  # stable: ties keep order
    return [int(i) for i in order if ok[i]]


def best_each(obj: Objective, columns: dict) -> np.ndarray:
    """[point] the best candidate at each point alone (vectorised; ties, and no candidate allowed: the first)."""
    ok, keys = scores(obj, columns, each_point=True)
    alive = ok.copy()
    for k in range(keys.shape[-1]):
        v = np.where(alive, keys[..., k], -np.inf)
        alive &= v == v.max(axis=0, keepdims=True)
    return np.argmax(alive, axis=0)  # all False: 0


def choose(obj: Objective, columns: dict, usable=None, checks: int | None = None) -> int | None:
    """The best candidate (``rank``'s first), or the first of the first ``checks`` ranked that ``usable(i)``
    passes (a further test the door makes on a few candidates, e.g. an engine's KV share); None when none is
    allowed or usable."""
    order = rank(obj, columns)
    if usable is None:
        return order[0] if order else None
    return next((i for i in order[:checks] if usable(i)), None)


def choose_staged(obj: Objective, first: list, rest: list, evaluate) -> tuple[list, int]:
    """(the candidates scored, the index of the best among them): ``evaluate(candidates)`` -> columns of
    ``first``, and of ``rest`` too where the best of ``first`` misses a point on the first term (the layouts that
    hold a load can rank far down the decode search). Ties and nothing allowed: the first scored."""
    cols = evaluate(first)
    i = _first(rank(obj, cols))
    if rest and misses_a_point(obj, cols, i):
        more = evaluate(rest)
        first = first + rest
        cols = {k: np.concatenate([np.atleast_1d(cols[k]), np.atleast_1d(more[k])]) for k in obj.columns}
        i = _first(rank(obj, cols))
    return first, i


def misses_a_point(obj: Objective, columns: dict, i: int) -> bool:
    """Candidate ``i`` scores below 1 on the first term at some point (its sum over the points is under their
    count): a staged choice scores its next stage."""
    _, keys = scores(obj, columns)
    points = np.shape(np.asarray(columns[obj.terms[0].column]))[1:] or (1,)
    return bool(keys[i, 0] < points[0])


@dataclass
class Staged:
    """``choose_staged`` with the door evaluating each candidate itself (serve calls serving.steady from its own
    frame, so that its CLI reaches the engine in as few calls with a searched layout as with one given;
    tests/cli/test_serve_hops.py): iterate ``stages()`` (``first``; then ``rest`` where the best of ``first`` misses
    a point on the first term), ``results.append`` each candidate's result in order, then ``best()``.
    ``columns_of(results)`` turns the results into the objective's columns [candidate, point] (no engine call)."""

    obj: Objective
    first: list
    rest: Sequence  # a list, or serve_layout.Rest (checked when read)
    columns_of: Callable[[list], dict]
    results: list = field(default_factory=list)

    def stages(self):
        yield self.first
        cols = self.columns_of(self.results)
        if misses_a_point(self.obj, cols, _first(rank(self.obj, cols))) and self.rest:  # a lazy rest (a Sequence)
            yield self.rest  # is read here alone

    @property
    def scored(self) -> list:
        n = len(self.results)
        return self.first[:n] if n <= len(self.first) else (self.first + list(self.rest))[:n]

    def best(self) -> int:
        """The index in ``scored`` of the best (one scored: it, without columns; ties and none allowed: 0)."""
        return 0 if len(self.results) == 1 else _first(rank(self.obj, self.columns_of(self.results)))


def best_each_staged(obj: Objective, first: list, rest: list, evaluate) -> tuple[list, np.ndarray]:
    """``choose_staged`` at each point alone: (the candidates scored, [point] the index of each point's best), the
    rest scored where the best of ``first`` misses a point on the first term."""
    cols = evaluate(first)
    pick = best_each(obj, cols)
    _, keys = scores(obj, cols, each_point=True)
    missed = keys[pick, np.arange(pick.size), 0] <= 0
    if missed.any() and rest:  # a lazy rest (a Sequence) is read only where a point is missed
        rest = list(rest)
        more = evaluate(rest)
        cols = {k: np.concatenate([np.asarray(cols[k]), np.asarray(more[k])]) for k in obj.columns}
        pick = np.where(missed, best_each(obj, cols), pick)
        return first + rest, pick
    return first, pick


def _first(order: list[int]) -> int:
    return order[0] if order else 0
