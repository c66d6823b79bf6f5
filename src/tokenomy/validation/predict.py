"""Predict every validation case from its lowered work (prepare.py) timed by the engine under efficiency terms.

Every step and pass time is ``engine.times(work, topology, peaks, Efficiency(...))`` with one efficiency set per
case (arrays gathered by chip); this module adds only the serving scenario around it (t_step(B, P): a decode
step of B sequences with P interleaved prefill tokens; t_pf: the prefill pass):
  static_batch   latency = t_pf(B·ISL) + (OSL−1)·t_step(B, 0);  throughput/chip = B·OSL/(latency·n)
  prefill        latency = t_pf(B·ISL)
  decode         latency = OSL·t_step(B, 0);  time per output token = t_step(B, 0)
  concurrency    B = min(C, B_kv);  P = B·ISL/OSL;  TPOT = t_step(B, P)
                 TTFT = t_pf(ISL) + o_req + TPOT/2 + queue,  queue = (C/B_kv − 1)·lifetime when C > B_kv
  request_rate   Little's law for the mean number in the system N = min(λ·lifetime(1 + N), B_kv), a request
                 running with 1 + N others; P = λ·ISL·t_step(1 + N, 0) (prefill arriving during one plain step
                 rides in the next); solved for the smallest root on the batch grid, then timed at B = 1 + N
  max_throughput B = min(cap, B_kv);  P = B·ISL/OSL (every request's prefill is interleaved);  out tokens/s = B/t_step
B_kv: the batch whose KV cache of ISL+OSL tokens per sequence fits in kv_free_fraction of the HBM left after weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core import engine
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.validation.prepare import (METRIC_CODE, SCENARIO_CODE, Serving, Training, add_prefill, interp_work,
                                         take_work)
from tokenomy.validation.schema import EfficiencyTerms

SERVING_FIELDS = ("flops_fraction_max", "gemm_half_tokens", "hbm_fraction", "step_overhead_s", "layer_overhead_s",
                  "overlap_loss",
                  "allreduce_latency_s", "link_fraction", "request_overhead_s")
TRAIN_FIELDS = ("train_flops_fraction", "train_other_dense", "train_other_moe")
MAX_STEP_TOKENS = 8192.0  # scheduler token budget per step (TensorRT-LLM and vLLM default max_num_tokens)


@dataclass(frozen=True)
class Theta:
    """Efficiency terms as arrays aligned with the cases (or scalars); None = the roofline set."""

    flops_fraction_max: object
    gemm_half_tokens: object
    hbm_fraction: object
    step_overhead_s: object
    layer_overhead_s: object
    overlap_loss: object
    allreduce_latency_s: object
    link_fraction: object
    request_overhead_s: object

    def take(self, idx) -> "Theta":
        return Theta(**{f: (v[idx] if np.ndim(v) else v) for f, v in vars(self).items()})

    def efficiency(self, idx=slice(None), col: bool = False) -> Efficiency:
        """The engine's efficiency set for cases ``idx`` (as a column against a grid when ``col``)."""
        def g(v):
            v = np.asarray(v, dtype=float)
            v = v[idx] if v.ndim else v
            return v[:, None] if col and v.ndim else v
        return Efficiency(flops_fraction=g(self.flops_fraction_max), gemm_half_tokens=g(self.gemm_half_tokens),
                          hbm_fraction=g(self.hbm_fraction), overhead_s=g(self.step_overhead_s),
                          layer_overhead_s=g(self.layer_overhead_s), overlap_loss=g(self.overlap_loss),
                          allreduce_latency_s=g(self.allreduce_latency_s), link_fraction=g(self.link_fraction),
                          request_overhead_s=g(self.request_overhead_s), name="custom")


def gather(chips: np.ndarray, terms_by_chip: dict[str, EfficiencyTerms]) -> Theta:
    return Theta(**{f: np.array([getattr(terms_by_chip[c], f) for c in chips], dtype=float)
                    for f in SERVING_FIELDS})


def roofline_theta(s: Serving) -> Theta:
    """The roofline set (core.efficiency.ROOFLINE) for every case: peak FLOP/s, HBM and link bandwidth, the link's
    own latency, no overhead."""
    return Theta(flops_fraction_max=ROOFLINE.flops_fraction, gemm_half_tokens=ROOFLINE.gemm_half_tokens,
                 hbm_fraction=ROOFLINE.hbm_fraction, step_overhead_s=ROOFLINE.overhead_s,
                 layer_overhead_s=ROOFLINE.layer_overhead_s, overlap_loss=ROOFLINE.overlap_loss,
                 allreduce_latency_s=None, link_fraction=ROOFLINE.link_fraction,
                 request_overhead_s=ROOFLINE.request_overhead_s)


def _eff(th: Theta, idx, col: bool) -> Efficiency:
    if th.allreduce_latency_s is None:  # the roofline: scalars, the link's own latency
        return ROOFLINE
    return th.efficiency(idx, col)


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
            pk = engine.Peaks(*(x[:, None] for x in (pk.flops_per_s, pk.hbm_bytes_per_s, pk.hbm_bytes)))
        r = engine.times(take_work(w, idx), topo, pk, _eff(th, idx, col))
        step[idx], bound[idx] = r.step_s, r.bound
    return Timed(step, bound)


@dataclass(frozen=True)
class Prediction:
    value: np.ndarray  # in each case's metric unit; NaN where the configuration does not fit
    bound: np.ndarray  # engine.BOUNDS index of the step that dominates the metric
    batch: np.ndarray  # decode batch used
    prefill_tokens: np.ndarray  # interleaved prefill tokens per decode step
    capacity_limited: np.ndarray  # the KV cache, not the workload, set the batch


def _request_rate(s: Serving, th: Theta, t_pf: np.ndarray) -> tuple[np.ndarray, np.ndarray, Timed]:
    """Request-rate cases: the smallest N with N = min(λ·lifetime(1 + N), B_kv), lifetime = t_pf + o_req +
    t_step/2 + (OSL − 1)·t_step. h(N) = min(λ·lifetime, B_kv) − N is found on the batch grid (whose last point,
    B_kv + 1, always has h <= 0) and interpolated linearly between the bracketing points; the step is then timed
    at B = 1 + N (work between whole batches: the mean of the two) with P = λ·ISL·t_step(B, 0)."""
    lam, isl, osl = s.rate[:, None], s.isl[:, None], s.osl[:, None]
    o_req = np.asarray(th.request_overhead_s, dtype=float)
    o_req = o_req[:, None] if o_req.ndim else o_req
    t0 = time_work(s, s.grid, th).step_s
    p = np.minimum(lam * isl * t0, MAX_STEP_TOKENS)
    t1 = time_work(s, add_prefill(s.grid, s.grid_per_token, p), th).step_s
    life = t_pf[:, None] + o_req + t1 / 2 + (osl - 1) * t1
    N = s.grid_batch - 1.0
    h = np.minimum(lam * life, s.bmax[:, None]) - N
    h = np.where(np.isfinite(h), h, -1.0)  # a batch that does not fit is past the root
    j = np.clip(np.argmax(h <= 0, axis=1), 1, N.shape[1] - 1) - 1  # bracket [j, j + 1]
    rows = np.arange(N.shape[0])
    h0, h1, n0, n1 = h[rows, j], h[rows, j + 1], N[rows, j], N[rows, j + 1]
    u = np.where(n1 > n0, np.clip(h0 / np.maximum(h0 - h1, 1e-300), 0.0, 1.0), 0.0)
    w = interp_work(s.grid, j, u)
    per_tok = interp_work(s.grid_per_token, j, u)
    t0 = time_work(s, w, th).step_s
    p = np.minimum(s.rate * s.isl * t0, MAX_STEP_TOKENS)
    st = time_work(s, add_prefill(w, per_tok, p), th)
    return 1.0 + n0 + u * (n1 - n0), p, st


def predict_serving(s: Serving, th: Theta) -> Prediction:
    sc, me = s.scenario, s.metric
    pf = time_work(s, s.prefill, th)
    t_pf = pf.step_s
    st = time_work(s, s.step, th)
    ts, bound_st, b, p = st.step_s, st.bound, s.step_batch.copy(), s.step_prefill.copy()
    rr = np.flatnonzero(sc == SCENARIO_CODE["request_rate"])
    if rr.size:
        b_rr, p_rr, st_rr = _request_rate(s.take(rr), th.take(rr), t_pf[rr])
        ts, bound_st = ts.copy(), bound_st.copy()
        ts[rr], bound_st[rr], b[rr], p[rr] = st_rr.step_s, st_rr.bound, b_rr, p_rr
    o_req = th.request_overhead_s
    ttft_online = t_pf + o_req + ts / 2
    life = ttft_online + (s.osl - 1) * ts
    conc = sc == SCENARIO_CODE["concurrency"]
    queue = np.where(conc, np.maximum(s.concurrency / s.bmax - 1.0, 0.0) * life, 0.0)
    static_lat = t_pf + (s.osl - 1) * ts
    lat = np.select([sc == SCENARIO_CODE["prefill"], sc == SCENARIO_CODE["decode"]], [t_pf, s.osl * ts],
                    default=static_lat)
    ttft = np.where(sc == SCENARIO_CODE["static_batch"], t_pf, ttft_online + queue)
    tput = np.select([sc == SCENARIO_CODE["static_batch"], conc],
                     [s.batch * s.osl / (static_lat * s.n), b * s.osl / (life * s.n)], default=b / (ts * s.n))
    value = np.select([me == METRIC_CODE["tpot_s"], me == METRIC_CODE["ttft_s"], me == METRIC_CODE["latency_s"]],
                      [ts, ttft, lat], default=tput)
    prefill_metric = (me == METRIC_CODE["ttft_s"]) | (sc == SCENARIO_CODE["prefill"])
    bound = np.where(prefill_metric, pf.bound, bound_st)
    cap_lim = ((conc & (s.concurrency > s.bmax))
               | ((sc == SCENARIO_CODE["max_throughput"]) & (s.bmax < s.cap)))
    return Prediction(np.where(s.bmax >= 1, value, np.nan), bound, b, p, cap_lim)


def predict_training(t: Training, eta, other_dense, other_moe) -> np.ndarray:
    """Step time = [roofline/η_train + φ·roofline_bf16]/(1 − bubble), φ = φ_moe for MoE models else φ_dense
    (bubble: core.pipeline.bubble_fraction, the idle share of a 1F1B step)."""
    phi = np.where(t.moe, other_moe, other_dense)
    return (t.roofline_s / np.asarray(eta, dtype=float) + phi * t.roofline_bf16_s) / (1.0 - t.bubble)


def bound_names(idx) -> list[str]:
    return [engine.BOUNDS[int(i)] for i in np.ravel(idx)]
