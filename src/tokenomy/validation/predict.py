"""Predict every validation case from prepared arrays and efficiency terms (one set per case, gathered by chip).

Scenarios (T = tokens in a step, P = prefill tokens interleaved into a decode step):
  static_batch   latency = t_prefill(B·ISL) + (OSL−1)·t_step(B, 0);  throughput/chip = B·OSL/(latency·n)
  prefill        latency = t_prefill(B·ISL)
  decode         latency = OSL·t_step(B, 0);  time per output token = t_step(B, 0)
  concurrency    B = min(C, B_kv);  P = B·ISL/OSL;  TPOT = t_step(B, P)
                 TTFT = t_prefill(ISL) + o_req + TPOT/2 + queue,  queue = (C/B_kv − 1)·lifetime when C > B_kv
  request_rate   Little's law solved for the mean number in the system N = λ·lifetime(N); a request runs with
                 1 + N others on average; P = λ·ISL·t_step
  max_throughput B = min(cap, B_kv);  P = B·ISL/OSL (every request's prefill is interleaved);  out tokens/s = B/t_step
with t_step(B, P) = max(compute, memory) + TP all-reduce + o_step   (terms.py) and B_kv the batch whose KV cache of
ISL+OSL tokens per sequence fits in kv_free_fraction of the HBM left after weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core.roofline import BOUND_NAMES
from tokenomy.validation.prepare import GRID, METRIC_CODE, SCENARIO_CODE, Serving, Training
from tokenomy.validation.schema import EfficiencyTerms
from tokenomy.validation.terms import gemm_time_s, tp_allreduce_s

SERVING_FIELDS = ("flops_fraction_max", "gemm_half_tokens", "hbm_fraction", "step_overhead_s",
                  "allreduce_latency_s", "link_fraction", "request_overhead_s")
TRAIN_FIELDS = ("train_flops_fraction", "train_other_dense", "train_other_moe")
FIXED_POINT_ITERATIONS = 30
MAX_STEP_TOKENS = 8192.0  # scheduler token budget per step (TensorRT-LLM and vLLM default max_num_tokens)


@dataclass(frozen=True)
class Theta:
    """Efficiency terms as arrays aligned with the cases (or scalars)."""

    flops_fraction_max: object
    gemm_half_tokens: object
    hbm_fraction: object
    step_overhead_s: object
    allreduce_latency_s: object
    link_fraction: object
    request_overhead_s: object

    def take(self, idx) -> "Theta":
        return Theta(**{f: (v[idx] if np.ndim(v) else v) for f, v in vars(self).items()})


def gather(chips: np.ndarray, terms_by_chip: dict[str, EfficiencyTerms]) -> Theta:
    return Theta(**{f: np.array([getattr(terms_by_chip[c], f) for c in chips], dtype=float)
                    for f in SERVING_FIELDS})


def _interp(grid_vals: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation in batch on GRID (exact for dense models, whose terms are linear in B)."""
    b = np.asarray(b, dtype=float)
    j = np.clip(np.floor(np.log2(np.maximum(b, 1.0))).astype(int), 0, GRID.size - 2)
    lo, hi = GRID[j], GRID[j + 1]
    rows = np.arange(grid_vals.shape[0])
    v0, v1 = grid_vals[rows, j], grid_vals[rows, j + 1]
    return v0 + (b - lo) * (v1 - v0) / (hi - lo)


@dataclass(frozen=True)
class StepTerms:
    compute_s: np.ndarray
    memory_s: np.ndarray
    comms_s: np.ndarray
    overhead_s: np.ndarray

    @property
    def time_s(self) -> np.ndarray:
        return np.maximum(self.compute_s, self.memory_s) + self.comms_s + self.overhead_s

    @property
    def bound(self) -> np.ndarray:
        return np.argmax(np.stack(np.broadcast_arrays(self.compute_s, self.memory_s, self.comms_s,
                                                      self.overhead_s)), axis=0)


def compute_s(s: Serving, th: Theta, flops, tokens):
    return gemm_time_s(flops, tokens, s.expert_flops_tok, s.expert_rows, s.n * s.peak, th.flops_fraction_max,
                       th.gemm_half_tokens)


def decode_step(s: Serving, th: Theta, b, p) -> StepTerms:
    """One continuous-batching step: b decode sequences plus p interleaved prefill tokens."""
    t = b + p
    flops = _interp(s.dec_flops, b) + p * s.pf_flops_tok
    nbytes = _interp(s.dec_bytes, b) + p * s.pf_bytes_tok
    comm = tp_allreduce_s(s.tp, t, s.hidden, s.layers, s.link_bw, th.link_fraction, th.allreduce_latency_s)
    return StepTerms(compute_s(s, th, flops, t), nbytes / (s.n * s.bw * th.hbm_fraction), comm,
                     np.broadcast_to(th.step_overhead_s, np.shape(flops)))


def prefill_pass(s: Serving, th: Theta) -> StepTerms:
    comm = tp_allreduce_s(s.tp, s.pass_tokens, s.hidden, s.layers, s.link_bw, th.link_fraction,
                          th.allreduce_latency_s)
    return StepTerms(compute_s(s, th, s.pass_flops, s.pass_tokens),
                     s.pass_bytes / (s.n * s.bw * th.hbm_fraction), comm,
                     np.broadcast_to(th.step_overhead_s, s.pass_flops.shape))


@dataclass(frozen=True)
class Prediction:
    value: np.ndarray  # in each case's metric unit; NaN where the configuration does not fit
    bound: np.ndarray  # BOUND_NAMES index of the step that dominates the metric
    batch: np.ndarray  # decode batch used
    capacity_limited: np.ndarray  # the KV cache, not the workload, set the batch


def _little(s: Serving, th: Theta, t_pf: np.ndarray, mask: np.ndarray):
    """Request-rate cases: solve N = λ·(TTFT + (OSL−1)·t_step(1 + N)) by damped fixed-point iteration.
    Returns (batch, prefill tokens per step) for every case; only the masked ones are computed."""
    b, p = np.ones(mask.shape), np.zeros(mask.shape)
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return b, p
    s, th, t_pf, lam = s.take(idx), th.take(idx), t_pf[idx], s.rate[idx]
    n_sys, pf = np.zeros(idx.size), np.zeros(idx.size)
    for _ in range(FIXED_POINT_ITERATIONS):
        # prefill tokens that arrive during one plain decode step ride along in the next step (first order:
        # solving P = λ·ISL·t_step(P) self-consistently over-predicted the held-out TTFT and TPOT)
        pf = np.minimum(lam * s.isl * decode_step(s, th, 1.0 + n_sys, 0.0).time_s, MAX_STEP_TOKENS)
        st = decode_step(s, th, 1.0 + n_sys, pf).time_s
        life = t_pf + th.request_overhead_s + st / 2 + (s.osl - 1) * st
        n_sys = 0.5 * n_sys + 0.5 * np.minimum(lam * life, s.bmax)
    b[idx], p[idx] = 1.0 + n_sys, pf
    return b, p


def predict_serving(s: Serving, th: Theta) -> Prediction:
    sc, me = s.scenario, s.metric
    pf = prefill_pass(s, th)
    conc_b = np.minimum(s.concurrency, s.bmax)
    thr_b = np.minimum(s.cap, s.bmax)
    rr = sc == SCENARIO_CODE["request_rate"]
    rr_b, rr_p = _little(s, th, pf.time_s, rr)
    b = np.select([sc == SCENARIO_CODE["concurrency"], sc == SCENARIO_CODE["max_throughput"], rr],
                  [conc_b, thr_b, rr_b], default=s.batch)
    p = np.select([sc == SCENARIO_CODE["concurrency"], sc == SCENARIO_CODE["max_throughput"], rr],
                  [conc_b * s.isl / s.osl, thr_b * s.isl / s.osl, rr_p], default=0.0)
    b = np.where(np.isfinite(b) & (b >= 1), b, 1.0)
    st = decode_step(s, th, b, p)
    ts = st.time_s
    t_pf = pf.time_s
    ttft_online = t_pf + th.request_overhead_s + ts / 2
    life = ttft_online + (s.osl - 1) * ts
    queue = np.where(sc == SCENARIO_CODE["concurrency"], np.maximum(s.concurrency / s.bmax - 1.0, 0.0) * life, 0.0)
    static_lat = t_pf + (s.osl - 1) * ts
    lat = np.select([sc == SCENARIO_CODE["prefill"], sc == SCENARIO_CODE["decode"]], [t_pf, s.osl * ts],
                    default=static_lat)
    ttft = np.where(sc == SCENARIO_CODE["static_batch"], t_pf, ttft_online + queue)
    tput = np.select([sc == SCENARIO_CODE["static_batch"], sc == SCENARIO_CODE["concurrency"]],
                     [s.batch * s.osl / (static_lat * s.n), np.minimum(s.concurrency, s.bmax) * s.osl / (life * s.n)],
                     default=b / (ts * s.n))
    value = np.select([me == METRIC_CODE["tpot_s"], me == METRIC_CODE["ttft_s"], me == METRIC_CODE["latency_s"]],
                      [ts, ttft, lat], default=tput)
    prefill_metric = (me == METRIC_CODE["ttft_s"]) | (sc == SCENARIO_CODE["prefill"])
    bound = np.where(prefill_metric, pf.bound, st.bound)
    cap_lim = (((sc == SCENARIO_CODE["concurrency"]) & (s.concurrency > s.bmax))
               | ((sc == SCENARIO_CODE["max_throughput"]) & (s.bmax < s.cap)))
    ok = s.fits & (s.bmax >= 1)
    return Prediction(np.where(ok, value, np.nan), bound, b, cap_lim)


def predict_training(t: Training, eta, other_dense, other_moe) -> np.ndarray:
    """Step time = [roofline/η_train + φ·roofline_bf16]·(1 + bubble), φ = φ_moe for MoE models else φ_dense."""
    phi = np.where(t.moe, other_moe, other_dense)
    return (t.roofline_s / np.asarray(eta, dtype=float) + phi * t.roofline_bf16_s) * (1.0 + t.bubble)


def bound_names(idx) -> list[str]:
    return [BOUND_NAMES[int(i)] for i in np.ravel(idx)]

