"""The time of one scheduler step on a deployment: n decodes at mean context c beside P prefill tokens at mean
context c_p, timed by the pass engine as Deployment.run times it.

    step_time       one mixed step; a fractional n (a steady-state mean) interpolates between floor and ceil, and
                    n = 0 (a prefill-only step) is timed as one one-token sequence beside the chunk (the engine needs
                    a batch >= 1); an engine that does not mix (Efficiency.mixed_prefill m = 0: SGLang without
                    --enable-mixed-chunk) runs a step carrying P > 0 prompt tokens as the prompt's own pass and
                    then the decode step: t(0, P) + min(n, 1)·t(n, 0) (``unmixed_step``; ``split_steps`` the one rule
                    that composes a step function's steps so)
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
from tokenomy.serving.batch_wait import batch_wait_of, batch_wait_steps, held_steps  # noqa: F401
from tokenomy.serving.engine_profile import (EngineProfile, budget_batch,  # noqa: F401
                                             poll_steps, pooled_limits, profile_of, prompt_slot,
                                             scheduler_ranks, step_budget)
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
        # the one context and prefill context every point holds (None: they differ), and the lowerings at them by
        # context, shared with the timer's pieces (piece): a sweep's pieces lower the same two contexts
        self._uniform = uniform_value(context), uniform_value(prefill_context)
        self._table_chunk = None if chunk_tokens is None else uniform_value(chunk_tokens)  # many's decode table's
        self._at: dict = {}
        # many's decode-only tables by chunk size: (whole batches 0..k − 1 timed, their PassTerms), shared with the
        # timer's pieces, and the most whole batches a piece of the grid can ask (piece's ``top``): a sweep's pieces
        # time that table once, not one per piece
        self._tables: dict = {}
        self._top = None

    def piece(self, sl: slice, context, prefill_context, chunk_tokens, top=None) -> "StepTimer":
        """The timer over the points ``sl`` of a flat grid (the contexts and chunk tokens given flat, sliced here),
        sharing this one's lowerings at a uniform context and its decode-only tables: a closed loop solved in pieces
        (serving.steady) lowers its contexts once, not once a piece, and times its decode-only steps at every whole
        batch up to ``top`` (the most running sequences over the whole grid) once."""
        cut = lambda x: x[sl] if np.ndim(x) else x  # noqa: E731
        part = StepTimer(self.dep, cut(context), cut(prefill_context), None if chunk_tokens is None else
                         cut(chunk_tokens), (sl.stop - sl.start,))
        part._at, part._tables, part._top = self._at, self._tables, top
        return part

    def _lower(self, busy) -> engine.Lowered:
        """The lowering at the context where ``busy`` (some decodes), at 1 elsewhere; one of the last three again for
        the same mask (the floor and the ceil of a batch below 1 differ: 0 and 1 decodes; the decode table's)."""
        for mask, lo in self._lowered:
            if np.shape(mask) == np.shape(busy) and np.array_equal(mask, busy):
                return lo
        lo = self._lower_where(busy)
        self._lowered = [*self._lowered[-2:], (busy, lo)]
        return lo

    def _lowered_at(self, context: float, prefill_context: float) -> engine.Lowered:
        """dep.lower at one context, once per timer and its pieces."""
        key = (context, prefill_context)
        if key not in self._at:
            self._at[key] = self.dep.lower(context, prefill_context=prefill_context)
        return self._at[key]

    def _lower_where(self, busy) -> engine.Lowered:
        """dep.lower at the context where ``busy``, at 1 elsewhere. A sweep's points mostly share one context (its
        ISL and OSL): then the two contexts are lowered as numbers (once per timer and its pieces) and only the
        fields that differ between them are selected over the grid (engine.lower is elementwise in the context:
        the same values as lowering the grid, without its attention terms formed per point; ~15% of a 100k-point
        steady state, benchmarks/serve.py)."""
        (c, pc), dep = self._uniform, self.dep
        if c is None or pc is None:
            return dep.lower(np.where(busy, self.context, 1.0), prefill_context=self.prefill_context)
        if np.all(busy):
            return self._lowered_at(c, pc)
        if not np.any(busy):
            return self._lowered_at(1.0, pc)
        hi, idle = self._lowered_at(c, pc), self._lowered_at(1.0, pc)
        return replace(hi, **{f.name: np.where(busy, getattr(hi, f.name), getattr(idle, f.name))
                              for f in fields(hi) if _differs(getattr(hi, f.name), getattr(idle, f.name))})

    def _batched(self, k, prefill, chunk_tokens=None) -> engine.Work:
        """The pass at k decodes (k whole), for engine.times: fewer than the DP replicas times the pipeline's
        micro-batches run as one sequence per micro-batch of each replica (the busiest times it, the others idle: a
        pipeline of pp stages with fewer sequences than stages takes pp stage times a token, as it does with one
        sequence in each of its pp micro-batches); none as one 1-token sequence per replica (the engine needs
        B >= dp·M)."""
        lay = self.dep.layout
        one = float(lay.dp) * float(lay.pp if lay.microbatches is None else lay.microbatches)
        busy = k >= 1.0
        batch = k if np.all(k >= one) else np.where(busy, np.maximum(k, one), one)  # max(k, one) = k where k >= one
        chunk = self.chunk_tokens if chunk_tokens is None else chunk_tokens
        return engine.batched(self._lower(busy), batch, prefill, chunk)

    def terms(self, n_dec, prefill=0.0) -> engine.PassTerms:
        """The PassTerms of the step at the floor of ``n_dec`` decodes beside ``prefill`` tokens (__call__'s
        ``terms``, without timing the ceiling it does not return)."""
        d = self.dep
        return engine.times(self._batched(np.floor(np.maximum(np.asarray(n_dec, float), 0.0)), prefill), d.topo,
                            d.peaks, d.eff)

    def __call__(self, n_dec, prefill=0.0, *, terms: bool = False):
        """Seconds of one step of ``n_dec`` decodes beside ``prefill`` tokens: a fractional n interpolated between
        floor and ceil, t = t(⌊n⌋) + (n − ⌊n⌋)·(t(⌈n⌉) − t(⌊n⌋)); an engine that does not mix, the prompt's
        pass and the decode step (``split_steps``); ``terms``: also the PassTerms of the mixed step at the floor."""
        t, r_lo = self._mixed(n_dec, prefill)
        t = split_steps(lambda n, loads: [(self._mixed(n, P)[0], None, None) for P in loads], n_dec, [prefill],
                        self.dep.eff.mixed_prefill, timed=[(t, None, None)])[0][0]
        return (t, r_lo) if terms else t

    def _mixed(self, n_dec, prefill):
        """(seconds, PassTerms at the floor) of the step with the prompt tokens in the decodes' pass."""
        n, d = np.maximum(np.asarray(n_dec, float), 0.0), self.dep
        f, c = np.floor(n), np.ceil(n)
        r_lo = engine.times(self._batched(f, prefill), d.topo, d.peaks, d.eff)
        t = np.asarray(r_lo.step_s)
        if np.any(c != f):
            t = _between(n, f, t, engine.times(self._batched(c, prefill), d.topo, d.peaks, d.eff))
        return t, r_lo

    def many(self, n_dec, loads, *, mixed_only: bool = False) -> list[tuple]:
        """[(seconds, bound, reason) of the step at P beside the same n_dec decodes for P in loads], each over
        ``shape``: steady.solve's step function. One engine call for all the loads (stacked on a leading axis), so
        what depends on the batch alone is formed once; a load of no prefill tokens at all read off the decode-only
        steps of each whole batch (_table_batches), where every point has one context. An engine that does not mix
        (unless ``mixed_only``): each step carrying prompt tokens as the prompt's pass and the decode step
        (``split_steps``; the mixed step's bound and reason). The engine is called here, not through __call__ or a
        helper, to keep the serving path short (elementwise: __call__'s numbers; tests/cli/test_serve_hops.py)."""
        n, d = np.maximum(np.asarray(n_dec, float), 0.0), self.dep
        f, c = np.floor(n), np.ceil(n)
        batches = self._table_batches(c) if any(np.ndim(x) and not np.any(x) for x in loads) else None
        plain = [batches is not None and np.ndim(x) > 0 and not np.any(x) for x in loads]
        timed, out = [x for x, z in zip(loads, plain) if not z], []
        if timed:
            P = np.stack(np.broadcast_arrays(*(np.asarray(x, float) for x in timed)))
            r = engine.times(self._batched(f, P), d.topo, d.peaks, d.eff)
            t, bound, reason = np.asarray(r.step_s), r.bound, r.reason
            del r  # the floor's other terms freed before the ceiling's are formed (a smaller peak of memory)
            if np.any(c != f):
                t = _between(n, f, t, engine.times(self._batched(c, P), d.topo, d.peaks, d.eff))
            shape = (len(timed), *self.shape) if self.shape is not None else \
                np.broadcast_shapes(np.shape(t), np.shape(bound), np.shape(reason))
            t, bound, reason = (np.broadcast_to(x, shape) for x in (t, bound, reason))
            out = [(t[i], bound[i], reason[i]) for i in range(len(timed))]
        if batches is not None:  # the decode-only step at every whole batch, once (kept for the pieces)
            k = self._table_size(batches)
            if k is not None:
                self._tables[self._table_chunk] = (k, engine.times(
                    self._batched(np.arange(float(k)), 0.0, self._table_chunk), d.topo, d.peaks, d.eff))
            idle = _read_off(self._tables[self._table_chunk], n, f, c, self.shape)
        each = iter(out)
        out = [idle if z else next(each) for z in plain]
        if mixed_only:
            return out
        return split_steps(lambda k, P: self.many(k, P, mixed_only=True), n, loads, d.eff.mixed_prefill, out)

    def _table_size(self, batches) -> int | None:
        """How many whole batches 0..k − 1 the decode-only table must time for ``batches`` (k >= batches.size, up
        to the timer's top where it has one), or None where the table this timer and its pieces keep reaches far
        enough (the engine is elementwise in the batch: entry i is the same number in a table of any length)."""
        have = self._tables.get(self._table_chunk)
        if have is not None and have[0] >= batches.size:
            return None
        k = batches.size
        return max(k, int(np.ceil(self._top)) + 1) if self._top is not None and np.isfinite(self._top) else k

    def _table_batches(self, c):
        """The whole batches 0, 1, ..., max ⌈n⌉ at which many times the decode-only step once, where every point
        has one context and one chunk size and there are fewer such batches than points (else None): a closed
        loop's plain steps depend on the point through its whole batch alone, so a sweep of 10^5 points times a
        few hundred batches and reads its floor and ceiling off them (the same engine call per batch: the same
        numbers)."""
        top = float(np.max(c)) if np.size(c) else np.nan
        if None in self._uniform or (self.chunk_tokens is not None and self._table_chunk is None) \
                or not np.isfinite(top) or top + 1.0 > np.size(c) or self.shape is None:
            return None
        return np.arange(top + 1.0)


def unmixed_step(mixed_s, prompt_s, decode_s, n_dec, prefill, mixed):
    """A scheduler step's seconds where the engine does not mix prompt chunks into the decode step (m = ``mixed``
    < 1/2: SGLang's default, server_args enable_mixed_chunk False; catalog/engines/sglang.toml [scheduler]): a step
    carrying P > 0 prompt tokens is the prompt's own pass t(0, P) and then the running batch's decode step t(n, 0),
    the decodes waiting through the first, so every decoding request's next token comes t(0, P) + t(n, 0) after its
    last; min(n, 1)·t(n, 0) where a steady-state mean holds fewer than one decode (none: the prompt's pass alone).
    Where the engine mixes (vLLM V1, TensorRT-LLM) or the step carries no prompt tokens: ``mixed_s`` = t(n, P)."""
    split = (np.asarray(mixed) < 0.5) & (np.asarray(prefill) > 0)
    return np.where(split, prompt_s + np.minimum(n_dec, 1.0) * decode_s, mixed_s)


def split_steps(mixed_many, n_dec, loads, mixed, timed=None) -> list[tuple]:
    """[(seconds, bound, reason) of the step at P beside n_dec decodes for P in ``loads``] from ``mixed_many(n,
    loads)``, the same steps with the prompt tokens in the decodes' pass (``timed``: its answer at these n and loads
    where already formed): where the engine does not mix (m = ``mixed`` < 1/2) a step carrying P > 0 prompt tokens
    is t(0, P) + min(n, 1)·t(n, 0) (``unmixed_step``; the mixed step's bound and reason). The one rule StepTimer
    (``__call__``, ``many``) and validation's case steps (validation/case_step.py) compose their steps by."""
    out = mixed_many(n_dec, loads) if timed is None else timed
    if not (np.any(np.asarray(mixed) < 0.5) and any(np.any(np.asarray(P) > 0) for P in loads)):
        return out
    n = np.maximum(np.asarray(n_dec, float), 0.0)
    prompt = mixed_many(np.zeros_like(n), loads)
    decode = mixed_many(n, [np.zeros_like(n)])[0][0]
    return [(unmixed_step(t, tp, decode, n, P, mixed), b, r) for (t, b, r), (tp, _, _), P in zip(out, prompt, loads)]


def _between(n, f, t_lo, hi: engine.PassTerms):
    """A fractional batch n's step, linear between its floor f's (t_lo) and its ceiling's (``hi``)."""
    return t_lo + (n - f) * (np.asarray(hi.step_s) - t_lo)


def _read_off(timed: tuple, n, f, c, shape) -> tuple:
    """(seconds, bound, reason) of the decode-only step at n decodes from the table over whole batches
    (StepTimer.many's table: (k, PassTerms at 0..k − 1)): its floor's and ceiling's entries, between them as
    _between takes them."""
    batches, table = (timed[0],), timed[1]
    t_k, bound_k, reason_k = (np.broadcast_to(x, batches) for x in (table.step_s, table.bound, table.reason))
    lo = f.astype(np.intp)
    t = t_k[lo]
    if np.any(c != f):
        t = t + (n - f) * (t_k[c.astype(np.intp)] - t)
    return tuple(np.broadcast_to(x, shape) for x in (t, bound_k[lo], reason_k[lo]))


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
