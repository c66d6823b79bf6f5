"""The step function validation's serving model runs on: a case's prepared work (prepare.py) at a fractional
decode batch and P interleaved prefill tokens, timed by the engine under the case's terms (core.engine.times),
one hardware group at a time. The decode work is interpolated on the case's batch grid (``work_at``) with its
fields stacked, so that a step over thousands of cases is a few array operations (the fit times it ~10^5 times).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core import engine
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.engine_terms import EngineTerms
from tokenomy.serving.scheduler import split_steps
from tokenomy.validation.prepare import Serving
from tokenomy.validation.work_table import add_prefill, take_work
from tokenomy.validation.theta import Theta

def _eff(s: Serving, th: Theta, idx, col: bool) -> Efficiency:
    """The cases' efficiency set as their engines run it (core/engine_terms.EngineTerms.on, the update
    EngineProfile.on makes): the chip's terms with each case's host and EP overlap, its prompt passes' eager launch
    time, whether its prompt chunks share the decode step, the tile its MoE grouped GEMM pads each expert to and its
    runtime's per-sequence host time."""
    if th.allreduce_latency_s is None:  # the roofline: scalars, the link's own latency, no host time to hide
        return ROOFLINE

    def g(v):
        v = v[idx]
        return v[:, None] if col else v
    return EngineTerms(g(s.host_overlap), g(s.ep_overlap), (g(s.ep_sm_normal), g(s.ep_sm_low_latency)),
                       g(s.host_seq), g(s.eager_prefill), g(s.mixed), g(s.expert_tile)).on(th.efficiency(idx, col))


@dataclass(frozen=True)
class Timed:
    step_s: np.ndarray
    bound: np.ndarray  # index into engine.BOUNDS


def _group_sets(s: Serving, th: Theta, col: bool) -> list[tuple[np.ndarray, object, engine.Peaks, Efficiency]]:
    """Per hardware group of ``s``: (its cases, topology, peaks, efficiency set), as columns against a grid when
    ``col``."""
    out = []
    for idx, topo in s.groups():
        pk = s.peaks(idx)
        if col:
            pk = engine.Peaks(*(x[:, None] for x in (pk.flops_per_s, pk.hbm_bytes_per_s, pk.hbm_bytes, pk.narrow,
                                                     pk.attn_flops_per_s, pk.attn_narrow)))
        out.append((idx, topo, pk, _eff(s, th, idx, col)))
    return out


def time_work(s: Serving, w: engine.Work, th: Theta, sets=None) -> Timed:
    """engine.times of work ``w`` (rows aligned with the cases of ``s``), one hardware group at a time; ``sets``:
    the groups' _group_sets formed already (a step function's, for rows of work)."""
    step = np.full(np.shape(w.n), np.nan)
    bound = np.zeros(np.shape(w.n), dtype=int)
    col = np.ndim(w.n) > 1
    for idx, topo, pk, eff in _group_sets(s, th, col) if sets is None or col else sets:
        r = engine.times(take_work(w, idx), topo, pk, eff)
        step[idx], bound[idx] = r.step_s, r.bound
    return Timed(step, bound)


@dataclass(frozen=True)
class GridWork:
    """Decode work of each case at a fractional batch (``work_at``): the float fields stacked as [fields, cases]
    at P = 0 and per interleaved prefill token, and the other fields (flags, codes) at P = 0."""

    at_zero: np.ndarray
    per_token: np.ndarray
    other: dict[str, np.ndarray]

    def works(self, numeric: tuple[str, ...]) -> tuple[engine.Work, engine.Work]:
        """(decode work, work of one interleaved prefill token) as engine.Work, for work_table.add_prefill."""
        return tuple(engine.Work(**dict(zip(numeric, x)), **self.other) for x in (self.at_zero, self.per_token))


def work_at(s: Serving, batch) -> GridWork:
    """The decode work and the work of one interleaved prefill token of each case at a fractional ``batch``: linear
    interpolation between the bracketing points of the case's batch grid (exact for the affine fields of a dense
    model; clamped to the grid's ends)."""
    g = s.grid_batch
    b = np.clip(np.asarray(batch, float), g[:, 0], g[:, -1])
    j = np.clip(np.sum(g <= b[:, None], axis=1) - 1, 0, g.shape[1] - 2)
    rows = np.arange(g.shape[0])
    lo, hi = g[rows, j], g[rows, j + 1]
    u = np.where(hi > lo, (b - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
    tab, at_row = s.grid_table, s.grid_rows
    return GridWork(tab.at_zero.at(at_row, j, u), tab.per_token.at(at_row, j, u),
                    {f: v[at_row, j] for f, v in tab.other.items()})


class _CaseStep:
    """steady.solve's step(n, P) for the cases of ``s``: n decodes (at least one: the grid starts at batch 1) at
    the case's mean decode context plus P prefill tokens, timed by the engine under the cases' terms; ``many``:
    several prefill loads beside the same decodes, the decodes' work interpolated once. What does not depend on
    n or P — each hardware group's peaks and efficiency set — is formed once per step function (solve and the
    protocol runs call it dozens of times)."""

    def __init__(self, s: Serving, th: Theta):
        self.s, self.th = s, th
        self._per_group: list[tuple[np.ndarray, object, engine.Peaks, Efficiency]] | None = None

    def __call__(self, n, P):
        return self.many(n, [P])[0]

    def groups(self) -> list[tuple[np.ndarray, object, engine.Peaks, Efficiency]]:
        if self._per_group is None:
            self._per_group = _group_sets(self.s, self.th, False)
        return self._per_group

    def time(self, w: engine.Work) -> Timed:
        """time_work of ``w`` on these cases and terms, the groups' sets formed once (a prediction times its
        prompt passes and its decode steps beside the serving model's steps)."""
        return time_work(self.s, w, self.th, self.groups())

    def many(self, n, loads):
        """[(seconds, bound, reason)] of the steps at each load P beside n decodes; where the case's engine does not
        mix prompt chunks into the decode step (Serving.mixed 0), a step carrying P > 0 prompt tokens is the
        prompt's pass and the decode step (serving.scheduler.split_steps; the mixed step's bound)."""
        return split_steps(self._many_mixed, n, loads, self.s.mixed)

    def _many_mixed(self, n, loads):
        gw = work_at(self.s, np.maximum(n, 1.0))
        if any(np.ndim(P) > 1 for P in loads):  # loads against a grid: the general path
            return [self._timed(time_work(self.s, add_prefill(*gw.works(self.s.grid_table.numeric), P), self.th))
                    for P in loads]
        # the loads on a leading axis, one engine call per hardware group for all of them (elementwise: the same
        # numbers as one call a load)
        P = np.stack([np.broadcast_to(np.asarray(x, float), gw.at_zero.shape[1:]) for x in loads])
        X = gw.at_zero[:, None, :] + P[None] * gw.per_token[:, None, :]
        step, bound = np.full(P.shape, np.nan), np.zeros(P.shape, dtype=int)
        for idx, topo, pk, eff in self.groups():
            w = engine.Work(**dict(zip(self.s.grid_table.numeric, X[:, :, idx])),
                            **{f: v[idx] for f, v in gw.other.items()})
            r = engine.times(w, topo, pk, eff)
            step[:, idx], bound[:, idx] = r.step_s, r.bound
        return [(step[k], bound[k], np.zeros_like(bound[k])) for k in range(len(loads))]

    @staticmethod
    def _timed(t: Timed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return t.step_s, t.bound, np.zeros_like(t.bound)


def step_function(s: Serving, th: Theta) -> _CaseStep:
    return _CaseStep(s, th)
