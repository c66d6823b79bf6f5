"""The time of one scheduler step on a deployment: n decodes at mean context c beside P prefill tokens at mean
context c_p, timed by the pass engine as Deployment.run times it.

    step_time       one mixed step; a fractional n (a steady-state mean) interpolates between floor and ceil, and
                    n = 0 (a prefill-only step) is timed as one one-token sequence beside the chunk (the engine needs
                    a batch >= 1)
    StepTimer       the same for many steps at one context, lowered once (engine.lower) and batched per step
                    (engine.batched): steady.solve's step function
    rank_chunk      a prompt chunk's tokens where the layout would spread it over micro-batches or attention ranks

The engine profile and its step limits live in engine_profile.py, the KV capacity in kv_capacity.py; both are
re-exported here (``from tokenomy.serving.scheduler import EngineProfile, kv_tokens``).
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.serving.engine_profile import (EngineProfile, budget_batch, overlaps, overlaps_host,  # noqa: F401
                                             poll_steps, pooled_limits, profile_of, prompt_slot, scheduler_ranks,
                                             step_budget)
from tokenomy.serving.kv_capacity import (KVCapacity, kv_capacity, kv_sequence_bytes, kv_sequences,  # noqa: F401
                                          kv_tokens, sequences_held, uniform_value)


class StepTimer:
    """Scheduler steps at one mean decode context and prefill context (module docstring: step_time): the contexts
    lowered once (engine.lower) and batched per call, so the serving model's several steps per point — with and
    without prefill, floor and ceil of a fractional batch — share the attention and KV terms of the context.
    ``many`` is steady.solve's step function; ``shape`` (the points') the shape its answers broadcast to."""

    def __init__(self, dep: Deployment, context, prefill_context=1.0, chunk_tokens=None, shape=None):
        self.dep, self.context, self.prefill_context = dep, context, prefill_context
        self.chunk_tokens = chunk_tokens  # a prompt chunk's tokens (engine.batched prefill_chunk)
        self.shape = shape
        self._lowered: list[tuple] = []  # (where decodes run, the lowering), the most recent last

    def _lower(self, busy) -> engine.Lowered:
        """The lowering at the context where ``busy`` (some decodes), at 1 elsewhere; one of the last two again for
        the same mask (the floor and the ceil of a batch below 1 differ: 0 and 1 decodes)."""
        for mask, lo in self._lowered:
            if np.shape(mask) == np.shape(busy) and np.array_equal(mask, busy):
                return lo
        lo = _lower_where(self.dep, busy, self.context, self.prefill_context)
        self._lowered = [*self._lowered[-1:], (busy, lo)]
        return lo

    def _batched(self, k, prefill) -> engine.Work:
        """The pass at k decodes (k whole), for engine.times: fewer than the DP replicas times the pipeline's
        micro-batches run as one sequence per micro-batch of each replica (the busiest times it, the others idle: a
        pipeline of pp stages with fewer sequences than stages takes pp stage times a token, as it does with one
        sequence in each of its pp micro-batches); none as one 1-token sequence per replica (the engine needs
        B >= dp·M)."""
        lay = self.dep.layout
        one = float(lay.dp) * float(lay.pp if lay.microbatches is None else lay.microbatches)
        busy = k >= 1.0
        batch = k if np.all(k >= one) else np.where(busy, np.maximum(k, one), one)  # max(k, one) = k where k >= one
        return engine.batched(self._lower(busy), batch, prefill, self.chunk_tokens)

    def __call__(self, n_dec, prefill=0.0, *, terms: bool = False):
        """Seconds of one step of ``n_dec`` decodes beside ``prefill`` tokens: a fractional n interpolated between
        floor and ceil, t = t(⌊n⌋) + (n − ⌊n⌋)·(t(⌈n⌉) − t(⌊n⌋)); ``terms``: also the PassTerms at the floor."""
        n, d = np.maximum(np.asarray(n_dec, float), 0.0), self.dep
        f, c = np.floor(n), np.ceil(n)
        r_lo = engine.times(self._batched(f, prefill), d.topo, d.peaks, d.eff)
        t = np.asarray(r_lo.step_s)
        if np.any(c != f):
            t = _between(n, f, t, engine.times(self._batched(c, prefill), d.topo, d.peaks, d.eff))
        return (t, r_lo) if terms else t

    def many(self, n_dec, loads) -> list[tuple]:
        """[(seconds, bound, reason) of the step at P beside the same n_dec decodes for P in loads], each over
        ``shape``: steady.solve's step function. One engine call for all the loads (stacked on a leading axis), so
        what depends on the batch alone is formed once; the engine is called here, not through __call__, to keep
        the serving path short (elementwise: __call__'s numbers)."""
        P = np.stack(np.broadcast_arrays(*(np.asarray(x, float) for x in loads)))
        n, d = np.maximum(np.asarray(n_dec, float), 0.0), self.dep
        f, c = np.floor(n), np.ceil(n)
        r = engine.times(self._batched(f, P), d.topo, d.peaks, d.eff)
        t = np.asarray(r.step_s)
        if np.any(c != f):
            t = _between(n, f, t, engine.times(self._batched(c, P), d.topo, d.peaks, d.eff))
        shape = (len(loads), *self.shape) if self.shape is not None else \
            np.broadcast_shapes(np.shape(t), np.shape(r.bound), np.shape(r.reason))
        t, bound, reason = (np.broadcast_to(x, shape) for x in (t, r.bound, r.reason))
        return [(t[i], bound[i], reason[i]) for i in range(len(loads))]


def _between(n, f, t_lo, hi: engine.PassTerms):
    """A fractional batch n's step, linear between its floor f's (t_lo) and its ceiling's (``hi``)."""
    return t_lo + (n - f) * (np.asarray(hi.step_s) - t_lo)


def _lower_where(dep: Deployment, busy, context, prefill_context) -> engine.Lowered:
    """dep.lower at ``context`` where ``busy``, at 1 elsewhere. A sweep's points mostly share one context (its
    ISL and OSL): then the two contexts are lowered as numbers and only the fields that differ between them are
    selected over the grid (engine.lower is elementwise in the context: the same values as lowering the grid,
    without its attention terms formed per point; ~15% of a 100k-point steady state, benchmarks/serve.py)."""
    c, pc = uniform_value(context), uniform_value(prefill_context)
    if c is None or pc is None:
        return dep.lower(np.where(busy, context, 1.0), prefill_context=prefill_context)
    if np.all(busy):
        return dep.lower(c, prefill_context=pc)
    idle = dep.lower(1.0, prefill_context=pc)
    if not np.any(busy):
        return idle
    at = dep.lower(c, prefill_context=pc)
    return replace(at, **{f.name: np.where(busy, getattr(at, f.name), getattr(idle, f.name))
                          for f in fields(at) if _differs(getattr(at, f.name), getattr(idle, f.name))})


def _differs(a, b) -> bool:
    """Two numeric lowered fields of different values (the model, layout and precision are the deployment's in
    both lowerings)."""
    numeric = (np.ndarray, float, int, np.generic)
    return isinstance(a, numeric) and isinstance(b, numeric) and not np.array_equal(a, b)


def step_time(dep: Deployment, n_dec, context, prefill=0.0, prefill_context=1.0, *, terms: bool = False,
              chunk_tokens=None):
    """Seconds of one scheduler step (module docstring); ``terms``: also the PassTerms at the floor batch;
    ``chunk_tokens``: a prompt chunk's tokens (StepTimer)."""
    return StepTimer(dep, context, prefill_context, chunk_tokens)(n_dec, prefill, terms=terms)


def rank_chunk(dep: Deployment, prof: EngineProfile, prefill):
    """The tokens of one prompt chunk where the layout would otherwise spread it — over pipeline micro-batches
    (pp > 1) or attention ranks (attention-DP): engine.batched prefill_chunk — else None: min(I, the step budget)
    chunked, the whole prompt otherwise. (Llama-8B on 8 H100 at pp8 had put an 8,000-token prompt at 0.05 s, under
    the 0.13 s of one chip's FLOPs.)"""
    lay = dep.layout
    if not (np.all(scheduler_ranks(lay) > lay.dp) or np.all(np.asarray(lay.pp) > 1)):
        return None
    I = np.asarray(prefill, float)
    return np.minimum(I, float(prof.max_num_tokens)) if prof.chunked_prefill else I
