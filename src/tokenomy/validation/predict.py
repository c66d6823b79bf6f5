"""Predict every validation case from its lowered work (prepare.py) timed by the engine under efficiency terms.

Every step and pass time is ``engine.times(work, topology, peaks, Efficiency(...))`` with one efficiency set per
case (arrays gathered by chip). Runs a serving engine schedules — concurrency (closed loop of C clients), request
rate (open loop, Poisson) and max throughput (every request queued at once: a closed loop at the scheduler cap) —
are predicted by the serving model users run, ``serving.steady.solve`` (continuous batching with chunked
prefill under the token budget, KV capacity from the case's engine profile, queueing), its step(n, P) the engine
on the case's work interpolated on a batch grid (``work_at``); a closed loop whose benchmark protocol runs from
the first wave (InferenceX, vllm/sglang bench, AIPerf, trtllm-bench, MLPerf Offline: prepare.case_protocol) as
that run (serving.protocol_waves: its first wave and the waves after it, each metric the tools' mean). The rest (t_step(B): a decode step of B sequences;
t_pf: the prefill pass):
  static_batch   latency = t_pf(B·ISL) + (OSL−1)·t_step(B);  throughput/chip = B·OSL/(latency·n)
  prefill        latency = t_pf(B·ISL)
  decode         latency = OSL·t_step(B);  time per output token = t_step(B)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np

from tokenomy.core import engine
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.serving import steady
from tokenomy.serving.protocol_waves import Waves, wave_figures
from tokenomy.validation.prepare import METRIC_CODE, SCENARIO_CODE, WORK_FIELDS, Serving, add_prefill, take_work
from tokenomy.validation.schema import EfficiencyTerms

SERVING_FIELDS = ("flops_fraction_max", "gemm_half_tokens", "hbm_fraction", "kv_hbm_fraction", "step_overhead_s",
                  "kernel_overhead_s", "sequence_overhead_s", "overlap_loss", "narrow_flops_ratio", "allreduce_latency_s",
                  "link_fraction", "nccl_link_fraction", "request_overhead_s")


@dataclass(frozen=True)
class Theta:
    """Efficiency terms as arrays aligned with the cases (or scalars); None = the roofline set."""

    flops_fraction_max: object
    gemm_half_tokens: object
    hbm_fraction: object
    kv_hbm_fraction: object
    narrow_flops_ratio: object
    step_overhead_s: object
    kernel_overhead_s: object
    sequence_overhead_s: object
    overlap_loss: object
    allreduce_latency_s: object
    link_fraction: object
    nccl_link_fraction: object
    request_overhead_s: object

    def take(self, idx) -> "Theta":
        def one(v):
            return v[idx] if np.ndim(v) else v
        return Theta(**{f.name: one(getattr(self, f.name)) for f in fields(self)})

    def efficiency(self, idx=slice(None), col: bool = False) -> Efficiency:
        """The engine's efficiency set for cases ``idx`` (as a column against a grid when ``col``). One chip's
        terms (every field a number, as the fit evaluates them) give the same set for any cases: built once per
        ``col`` (a fit's evaluation asks for it ~160 times)."""
        if all(isinstance(getattr(self, f.name), (int, float)) for f in fields(self)):  # hashable numbers
            return self._scalar_set(col)
        return self._set(idx, col)

    @lru_cache(maxsize=2)
    def _scalar_set(self, col: bool) -> Efficiency:
        return self._set(slice(None), col)

    def _set(self, idx, col: bool) -> Efficiency:
        def g(v):
            v = np.asarray(v, dtype=float)
            v = v[idx] if v.ndim else v
            return v[:, None] if col and v.ndim else v
        return Efficiency(flops_fraction=g(self.flops_fraction_max), gemm_half_tokens=g(self.gemm_half_tokens),
                          hbm_fraction=g(self.hbm_fraction), kv_hbm_fraction=g(self.kv_hbm_fraction),
                          narrow_flops_ratio=g(self.narrow_flops_ratio),
                          overhead_s=g(self.step_overhead_s),
                          kernel_overhead_s=g(self.kernel_overhead_s),
                          sequence_overhead_s=g(self.sequence_overhead_s), overlap_loss=g(self.overlap_loss),
                          allreduce_latency_s=g(self.allreduce_latency_s), link_fraction=g(self.link_fraction),
                          nccl_link_fraction=g(self.nccl_link_fraction),
                          request_overhead_s=g(self.request_overhead_s),
                          name="custom")


def term(t: EfficiencyTerms, field: str) -> float:
    """A serving term of a chip's set; a set without a KV share (kv_hbm_fraction None) reads KV at η_hbm."""
    v = getattr(t, field)
    if v is None and field == "nccl_link_fraction":
        return t.link_fraction
    return t.hbm_fraction if v is None and field == "kv_hbm_fraction" else v


def gather(chips: np.ndarray, terms_by_chip: dict[str, EfficiencyTerms]) -> Theta:
    return Theta(**{f: np.array([term(terms_by_chip[c], f) for c in chips], dtype=float) for f in SERVING_FIELDS})


def roofline_theta(s: Serving) -> Theta:
    """The roofline set (core.efficiency.ROOFLINE) for every case: peak FLOP/s, HBM and link bandwidth, the link's
    own latency, no overhead."""
    return Theta(flops_fraction_max=ROOFLINE.flops_fraction, gemm_half_tokens=ROOFLINE.gemm_half_tokens,
                 hbm_fraction=ROOFLINE.hbm_fraction, kv_hbm_fraction=ROOFLINE.kv_fraction,
                 narrow_flops_ratio=ROOFLINE.narrow_flops_ratio, step_overhead_s=ROOFLINE.overhead_s,
                 kernel_overhead_s=ROOFLINE.kernel_overhead_s, sequence_overhead_s=ROOFLINE.sequence_overhead_s,
                 overlap_loss=ROOFLINE.overlap_loss,
                 allreduce_latency_s=None, link_fraction=ROOFLINE.link_fraction, nccl_link_fraction=1.0,
                 request_overhead_s=ROOFLINE.request_overhead_s)


def _eff(s: Serving, th: Theta, idx, col: bool) -> Efficiency:
    """The cases' efficiency set as their engines run it: the chip's terms with each case's host and EP overlap."""
    if th.allreduce_latency_s is None:  # the roofline: scalars, the link's own latency, no host time to hide
        return ROOFLINE

    def g(v):
        v = v[idx]
        return v[:, None] if col else v
    return th.efficiency(idx, col).with_(host_overlap=g(s.host_overlap), ep_overlap=g(s.ep_overlap),
                                         ep_sm_normal=g(s.ep_sm_normal), ep_sm_low_latency=g(s.ep_sm_low_latency))


@dataclass(frozen=True)
class Timed:
    step_s: np.ndarray
    bound: np.ndarray  # index into engine.BOUNDS


def time_work(s: Serving, w: engine.Work, th: Theta) -> Timed:
    """engine.times of work ``w`` (rows aligned with the cases of ``s``), one hardware group at a time."""
    step = np.full(np.shape(w.n), np.nan)
    bound = np.zeros(np.shape(w.n), dtype=int)
    col = np.ndim(w.n) > 1
    for idx, topo in s.groups():
        pk = s.peaks(idx)
        if col:
            pk = engine.Peaks(*(x[:, None] for x in (pk.flops_per_s, pk.hbm_bytes_per_s, pk.hbm_bytes, pk.narrow)))
        r = engine.times(take_work(w, idx), topo, pk, _eff(s, th, idx, col))
        step[idx], bound[idx] = r.step_s, r.bound
    return Timed(step, bound)


@dataclass(frozen=True)
class Prediction:
    value: np.ndarray  # in each case's metric unit; NaN where the configuration does not fit
    bound: np.ndarray  # engine.BOUNDS index of the step that dominates the metric
    batch: np.ndarray  # decode batch used
    prefill_tokens: np.ndarray  # interleaved prefill tokens per decode step
    capacity_limited: np.ndarray  # the KV cache, not the workload, set the batch


def work_at(s: Serving, batch) -> tuple[engine.Work, engine.Work]:
    """(decode work, work of one interleaved prefill token) of each case at a fractional ``batch``: linear
    interpolation between the bracketing points of the case's batch grid (exact for the affine fields of a dense
    model; clamped to the grid's ends)."""
    g = s.grid_batch
    b = np.clip(np.asarray(batch, float), g[:, 0], g[:, -1])
    j = np.clip(np.sum(g <= b[:, None], axis=1) - 1, 0, g.shape[1] - 2)
    rows = np.arange(g.shape[0])
    lo, hi = g[rows, j], g[rows, j + 1]
    u = np.where(hi > lo, (b - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
    num, W, T = s.grid_stacked

    def at(X, w):
        x0 = X[:, rows, j]
        out = dict(zip(num, x0 + u * (X[:, rows, j + 1] - x0)))
        return engine.Work(**out, **{f: np.asarray(getattr(w, f))[rows, j] for f in WORK_FIELDS if f not in out})
    return at(W, s.grid), at(T, s.grid_per_token)


class _CaseStep:
    """steady.solve's step(n, P) for the cases of ``s``: n decodes (at least one: the grid starts at batch 1) at
    the case's mean decode context plus P prefill tokens, timed by the engine under the cases' terms; ``many``:
    several prefill loads beside the same decodes, the decodes' work interpolated once."""

    def __init__(self, s: Serving, th: Theta):
        self.s, self.th = s, th

    def __call__(self, n, P):
        return self.many(n, [P])[0]

    def many(self, n, loads):
        w, per_tok = work_at(self.s, np.maximum(n, 1.0))
        out = []
        for P in loads:
            t = time_work(self.s, add_prefill(w, per_tok, P), self.th)
            out.append((t.step_s, t.bound, np.zeros_like(t.bound)))
        return out


def step_function(s: Serving, th: Theta) -> _CaseStep:
    return _CaseStep(s, th)


SERVED = ("concurrency", "request_rate", "max_throughput")  # scenarios predicted by the serving model (steady)


def _load(s: Serving, closed: bool) -> np.ndarray:
    """The clients of a closed loop — C (concurrency), or for max throughput the protocol's one wave of every
    prompt (offline) or, under the steady protocol, the scheduler cap (trtllm-bench queues every request at once) —
    or an open loop's request rate."""
    if not closed:
        return s.rate
    wave = np.where(s.burst > 0, s.prompts, s.cap)
    return np.where(s.scenario == SCENARIO_CODE["concurrency"], s.concurrency, wave)


def _served(s: Serving, th: Theta, closed: bool, arrivals: str = "staggered") -> steady.Solved:
    """steady.solve on these cases at their load (_load)."""
    o_req = np.asarray(th.request_overhead_s, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        pts = steady.Points(isl=s.isl, osl=s.osl, prefill=s.isl, load=_load(s, closed), cap=np.minimum(s.bmax, s.cap),
                            budget=s.budget, whole_prompts=s.whole > 0, request_overhead_s=o_req)
        return steady.solve(step_function(s, th), pts, closed=closed, arrivals=arrivals)


def _protocol_runs(s: Serving, th: Theta, r: steady.Solved) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(TPOT, TTFT, requests/s) of closed-loop cases: the steady state's, or where the case's protocol runs from the
    first wave (Serving.burst) that run's figures in closed form (serving.protocol_waves: the first wave, then the
    waves after it, phase-locked where the tool draws fixed lengths; checked against the simulator there)."""
    tpot, ttft, X = r.tpot_s.copy(), r.ttft0_s + r.queue_s, r.requests_per_s.copy()
    idx = np.flatnonzero(s.burst > 0)
    if not idx.size:
        return tpot, ttft, X
    sk, tk = s.take(idx), th.take(idx)
    stag = steady.Solved(**{f.name: np.asarray(getattr(r, f.name))[idx] for f in fields(steady.Solved)})
    tog = _served(sk, tk, True, "together")
    w = Waves(_load(sk, True), sk.prompts, sk.isl, sk.osl, sk.budget, sk.whole > 0, sk.locked > 0,
              np.asarray(tk.request_overhead_s, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        f = wave_figures(step_function(sk, tk), w, stag, tog)
    tpot[idx], ttft[idx], X[idx] = f.tpot_s, f.ttft_s, f.requests_per_s
    return tpot, ttft, X


def predict_serving(s: Serving, th: Theta) -> Prediction:
    """Static, prefill and decode runs by the module docstring's formulas; concurrency, request-rate and
    max-throughput runs by the serving model itself (serving.steady.solve, the equations ``tokenomy serve``
    uses), each step timed by the engine on the case's prepared work."""
    sc, me = s.scenario, s.metric
    pf = time_work(s, s.prefill, th)
    t_pf = pf.step_s
    st = time_work(s, s.step, th)
    ts, bound_st, b, p = st.step_s.copy(), st.bound.copy(), s.step_batch.copy(), s.step_prefill.copy()
    static_lat = t_pf + (s.osl - 1) * ts
    lat = np.select([sc == SCENARIO_CODE["prefill"], sc == SCENARIO_CODE["decode"]], [t_pf, s.osl * ts],
                    default=static_lat)
    ttft, tput = t_pf.copy(), s.batch * s.osl / (static_lat * s.n)
    cap_lim = np.zeros(len(sc), bool)
    codes = [SCENARIO_CODE[x] for x in SERVED]
    for closed, want in ((True, codes[::2]), (False, codes[1:2])):
        idx = np.flatnonzero(np.isin(sc, want))
        if not idx.size:
            continue
        sk, tk = s.take(idx), th.take(idx)
        r = _served(sk, tk, closed)
        bound_st[idx], b[idx], p[idx] = r.bound, r.batch, r.prefill_per_step
        ts[idx], ttft[idx], X = _protocol_runs(sk, tk, r) if closed else (r.tpot_s, r.ttft0_s + r.queue_s,
                                                                         r.requests_per_s)
        tput[idx] = X * s.osl[idx] / s.n[idx]
        cap_lim[idx] = r.demand_limited | r.over_budget
    value = np.select([me == METRIC_CODE["tpot_s"], me == METRIC_CODE["ttft_s"], me == METRIC_CODE["latency_s"]],
                      [ts, ttft, lat], default=tput)
    prefill_metric = (me == METRIC_CODE["ttft_s"]) | (sc == SCENARIO_CODE["prefill"])
    bound = np.where(prefill_metric, pf.bound, bound_st)
    return Prediction(np.where(s.bmax >= 1, value, np.nan), bound, b, p, cap_lim)


def bound_names(idx) -> list[str]:
    return [engine.BOUNDS[int(i)] for i in np.ravel(idx)]
