"""Dollars per token from a pass, and the engine's terms of a pass laid out for the economics.

    $/token = n_chips · ($/chip-h / 3600) · step_s / tokens_per_step               (lecture §2.1: rental ÷ tokens)
    $/Mtok  = 1e6 · $/token

``Serving`` is a ``core.deployment.Deployment`` (model, hardware, layout, dtypes, efficiency set, price) plus the
rule that chose its layout. ``Serving.terms`` reads every term from the one engine (core/engine.py): the memory
term split into weights / KV / activations and the comms split into TP / EP come straight from ``PassTerms``; the
compute term is split into weight matmuls and attention by running the engine on the attention-free op list
(core/coeffs.coefficients with a filter) — compute is linear in the op sums at fixed GEMM rows, so
attention_s = compute_s − matmul_s exactly. The times are *unmasked* (the same engine with the batch-shape checks
and the HBM capacity lifted), so solvers can run through points that do not fit; ``fits`` and ``reason`` say which
points are real, and every row built from Terms shows no time where a point does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from tokenomy.core import engine
from tokenomy.core.coeffs import ModelShape, coefficients, shape_of
from tokenomy.core.deployment import Deployment, usd_per_mtok
from tokenomy.core.efficiency import ROOFLINE


def check_positive(name: str, v) -> float:
    """A positive finite float or a one-line ValueError naming the field."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a positive number, got {v!r}") from None
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{name}: must be a positive number, got {v!r}")
    return x


@lru_cache(maxsize=32)
def matmul_shape_of(model) -> ModelShape:
    """The model without its attention-score ops (core/coeffs.coefficients filtered): it depends on the model alone,
    so the layout search's probes and a roofline copy (``Serving.roofline``) build it once, not once per Serving."""
    return shape_of(model, coefficients(model, keep=lambda op: op.kind != "attention"))


@dataclass(frozen=True)
class Serving(Deployment):
    """A deployment as the serving economics see it: the engine's input plus the rule that chose the layout."""

    layout_rule: str = "the layout given"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.usd_per_chip_hour is not None:
            check_positive("usd_per_chip_hour", self.usd_per_chip_hour)

    @cached_property
    def matmul_shape(self) -> ModelShape:
        """The model without its attention-score ops: the engine's weight-matmul share of compute (``matmul_shape_of``:
        one per model, shared by its layouts, chip counts and roofline copies)."""
        return matmul_shape_of(self.model)

    def roofline(self) -> "Serving":
        """The same layout and dtypes under ideal efficiencies: the bound beside the estimate."""
        return replace(self, eff=ROOFLINE)

    def terms(self, batch, context, len_pass=1, kv_read_fraction=1.0, **kw) -> "Terms":
        """The engine's pass terms over the broadcast grid (unmasked times; see the module docstring)."""
        w = self.work(batch, context, len_pass, kv_read_fraction=kv_read_fraction, **kw)
        real = engine.times(w, self.topo, self.peaks, self.eff)
        free_peaks = replace(self.peaks, hbm_bytes=np.inf)
        r = self.lifted(w)
        bound = r if self.eff is ROOFLINE else engine.times(_lift(w), self.topo, free_peaks, ROOFLINE)
        wm = engine.work(self.matmul_shape, self.topo, self.layout, self.precision,
                         engine.Pass(batch, context, len_pass, **kw))
        matmul_s = engine.times(_lift(wm), self.topo, free_peaks, self.eff).compute_s
        shape = np.broadcast(np.asarray(r.step_s), np.asarray(real.reason)).shape
        T = np.asarray(r.batch) * np.asarray(r.len_pass)
        out = dict(
            batch=r.batch, context=r.context, len_pass=r.len_pass, matmul_s=matmul_s,
            attention_s=r.compute_s - matmul_s, compute_s=r.compute_s, weights_s=r.weights_read_s, kv_s=r.kv_s,
            other_s=r.act_s, memory_s=r.memory_s, tp_comm_s=r.tp_comm_s, ep_comm_s=r.ep_comm_s, comms_s=r.comms_s,
            overhead_s=r.overhead_s, step_s=r.step_s, roofline_step_s=bound.step_s, bound=r.bound,
            tokens_per_step=T, tokens_per_s=r.tokens_per_s, tokens_per_s_per_chip=r.tokens_per_s_per_chip,
            tokens_per_s_per_user=r.tokens_per_s_per_user, usd_per_mtok=usd_per_mtok(r.step_s, T, r.chips, self.price),
            mfu=r.mfu, memory_per_chip_bytes=real.memory_per_chip_bytes, hbm_bytes=real.hbm_bytes,
            fits=real.reason == 0, reason=real.reason)
        busy = tuple(np.broadcast_to(u, shape) for u in r.busy_shares())
        return Terms(**{k: np.broadcast_to(v, shape) for k, v in out.items()}, busy=busy, layout=self.layout,
                     passes=real)

    def lifted(self, w: engine.Work) -> engine.PassTerms:
        """The engine's unmasked times of the work ``w`` (``self.work``): the batch-shape checks and the HBM
        capacity lifted (module docstring); ``terms``' times, whose step_s alone a latency search reads."""
        return engine.times(_lift(w), self.topo, replace(self.peaks, hbm_bytes=np.inf), self.eff)

    def unmasked(self, batch, context, len_pass=1, kv_read_fraction=1.0, **kw) -> engine.PassTerms:
        """``terms``' unmasked pass (``lifted``) alone: its step, compute and memory times, for the searches that read
        nothing else (latency, the balance points)."""
        return self.lifted(self.work(batch, context, len_pass, kv_read_fraction=kv_read_fraction, **kw))

    def engine_pass(self, batch, context) -> engine.PassTerms:
        """The engine's own (masked) pass of one new token at ``batch`` x ``context``: ``terms``' ``passes`` alone,
        without the roofline bound or the matmul share (no second model shape built for a check)."""
        return engine.times(self.work(batch, context, 1, kv_read_fraction=1.0), self.topo, self.peaks, self.eff)

    def memory_fits(self, batch, context):
        """(weights + KV + activations per chip <= usable HBM, the pass runs at all) over the grid: ``terms``'
        memory_per_chip_bytes <= hbm_bytes and reason == 0 from the engine's own pass alone (one work, one
        times: the searches for the largest batch or context read nothing else)."""
        real = self.engine_pass(batch, context)
        shape = np.broadcast(np.asarray(batch), np.asarray(context), np.asarray(real.reason)).shape
        return (np.broadcast_to(real.memory_per_chip_bytes <= real.hbm_bytes, shape),
                np.broadcast_to(np.asarray(real.reason) == 0, shape))

    def header(self) -> str:
        """The label with the efficiency set and the layout rule: what every economics title states."""
        eff = self.eff.name + (f" (terms of {self.eff.terms_from})" if self.eff.terms_from else "")
        return f"{self.label()}; {eff} efficiency; layout: {self.layout_rule}"


def _lift(w: engine.Work) -> engine.Work:
    """The work with the batch-shape checks lifted, so the engine returns times at every point."""
    return replace(w, structure=np.zeros(np.shape(w.structure), dtype=int))


@dataclass(frozen=True)
class Terms:
    """Engine terms in seconds per pass (arrays over the grid, unmasked) and what follows from them."""

    batch: object
    context: object
    len_pass: object
    matmul_s: object  # weight matmuls (dense, experts, LM head)
    attention_s: object  # q·k and p·v over the context
    compute_s: object
    weights_s: object  # weight bytes read
    kv_s: object  # KV read + written
    other_s: object  # activations spilled to HBM
    memory_s: object
    tp_comm_s: object
    ep_comm_s: object
    comms_s: object
    overhead_s: object
    step_s: object  # TPOT in decode, the whole pass otherwise (engine.PassTerms.step_s)
    roofline_step_s: object  # the same layout at ideal efficiencies
    bound: object  # index into engine.BOUNDS
    tokens_per_step: object
    tokens_per_s: object
    tokens_per_s_per_chip: object
    tokens_per_s_per_user: object
    usd_per_mtok: object
    mfu: object
    memory_per_chip_bytes: object
    hbm_bytes: object  # usable HBM per chip
    fits: object  # valid and fits in HBM
    reason: object  # engine.REASONS index
    busy: tuple  # (u_compute, u_hbm, u_link): engine.PassTerms.busy_shares, the load econ/energy.py prices
    layout: object  # the Layout evaluated
    passes: engine.PassTerms  # the engine's own (masked) result

    def bound_name(self, i: int) -> str:
        return engine.BOUNDS[int(np.ravel(self.bound)[i])]

    def why(self, i: int) -> str | None:
        """Why point ``i`` (flat) has no answer (engine.why_not), None when it fits."""
        return engine.why_not(self.passes, self.layout, i)


REFINE_POINTS = 256  # points per refinement round of the searches below: one engine call per round, ~8 bits each
# (vectorised: a round costs about what one scalar probe did, so a 60-step bisection becomes ~8 rounds; measured:
# the Context page's answer for 4 models 3.1 -> 1.4 CPU-s per change, one run on the 2-core dev machine)


def first_crossing(f, lo: float, hi: float, points: int = 512, iters: int = 60) -> float | None:
    """Smallest x in [lo, hi] (log-spaced search, then refinement) where f changes sign from < 0 to >= 0.

    ``f`` takes an array and returns an array. None when f < 0 on the whole grid; ``lo`` when f(lo) >= 0. The
    bracket is narrowed REFINE_POINTS log-spaced points at a time until its log-width is 2^-``iters`` of the first
    bracket's (what ``iters`` bisection steps reach); the upper end of the last bracket is returned."""
    x = np.geomspace(lo, hi, points)
    y = np.asarray(f(x), dtype=float)
    idx = np.flatnonzero(y >= 0)
    if idx.size == 0:
        return None
    i = int(idx[0])
    if i == 0:
        return float(lo)
    a, b = float(x[i - 1]), float(x[i])
    width = max(np.log(b / a) * 2.0 ** -iters, 8 * np.finfo(float).eps)  # no narrower than doubles can tell apart
    for _ in range(iters):  # each round narrows ~REFINE_POINTS-fold; the cap only guards against a stalled bracket
        if not np.log(b / a) > width:
            break
        g = np.geomspace(a, b, REFINE_POINTS)[1:-1]
        above = np.flatnonzero(np.asarray(f(g), dtype=float) >= 0)
        j = int(above[0]) if above.size else g.size  # g[j] the first point at or past the crossing
        a, b = (float(g[j - 1]) if j > 0 else a), (float(g[j]) if j < g.size else b)
    return b


def largest_whole(ok, hi: int) -> int:
    """Largest whole x in [1, hi] with ``ok(x)`` true, for ``ok`` monotone (true then false); 0 if ok(1) is false.

    ``ok`` takes an array of whole numbers and returns booleans: powers of two first, then the bracket narrowed
    REFINE_POINTS whole numbers at a time (the same answer as a bisection, in fewer calls)."""
    return int(largest_whole_each(lambda x: np.reshape(ok(x[:, 0]), (-1, 1)), hi, 1)[0])


def largest_whole_each(ok, hi: int, n: int) -> np.ndarray:
    """``largest_whole`` of n monotone predicates at once, one engine call per round for all of them (the largest
    batch at each of n contexts): ``ok`` takes whole numbers [points, n], column j for predicate j, and returns
    booleans of that shape. A column whose bracket is closed is probed at its last good number (padding)."""
    p = np.array([float(1 << i) for i in range(int(hi).bit_length())] + [float(hi)])
    good = np.asarray(ok(np.repeat(p[:, None], n, axis=1)), dtype=bool)
    bad_at = [int(np.flatnonzero(~good[:, j])[0]) if not good[:, j].all() else None for j in range(n)]
    lo = np.array([0 if k == 0 else hi if k is None else int(p[k - 1]) for k in bad_at], dtype=np.int64)
    up = np.array([1 if k == 0 else hi if k is None else int(p[k]) for k in bad_at], dtype=np.int64)
    while np.any(up - lo > 1):
        xs = [np.unique(np.linspace(a, b, min(REFINE_POINTS, b - a + 1)).round())[1:-1] if b - a > 1
              else np.array([float(max(a, 1))]) for a, b in zip(lo, up)]
        m = max(x.size for x in xs)
        grid = np.stack([np.concatenate([x, np.full(m - x.size, x[-1])]) for x in xs], axis=1)
        fits = np.asarray(ok(grid), dtype=bool)
        for j, x in enumerate(xs):
            if up[j] - lo[j] <= 1:
                continue
            bad = np.flatnonzero(~fits[:x.size, j])
            k = int(bad[0]) if bad.size else x.size  # x[k] the first that does not fit
            lo[j], up[j] = (int(x[k - 1]) if k > 0 else lo[j]), (int(x[k]) if k < x.size else up[j])
    return lo
