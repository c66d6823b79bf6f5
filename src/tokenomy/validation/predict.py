"""Predict every validation case from its lowered work (prepare.py) timed by the engine under efficiency terms.

Every step and pass time is ``engine.times(work, topology, peaks, Efficiency(...))`` with one efficiency set per
case (arrays gathered by chip). Runs a serving engine schedules — concurrency (closed loop of U clients), request
rate (open loop, Poisson; a run of N prompts holds at most N: serving/finite_run.py) and max throughput (every request queued at once: a closed loop at the scheduler cap) —
are predicted by the serving model users run, ``serving.steady.solve`` (continuous batching with chunked
prefill under the token budget, KV capacity from the case's engine profile, queueing), its step(n, P) the engine
on the case's work interpolated on a batch grid (case_step.py); a closed loop whose benchmark protocol runs from
the first wave (InferenceX, vllm/sglang bench, AIPerf, trtllm-bench, MLPerf Offline: case_setup.case_protocol) as
that run (serving.protocol_waves: its first wave and the waves after it, each metric the tools' mean). The rest (t_step(B): a decode step of B sequences;
t_pf: the prefill pass):
  static_batch   latency = t_pf(B·ISL) + (OSL−1)·t_step(B);  throughput/chip = B·OSL/(latency·n)
  prefill        latency = t_pf(B·ISL)
  decode         latency = OSL·t_step(B);  time per output token = t_step(B)
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from tokenomy.core import engine
from tokenomy.serving import steady
from tokenomy.serving.protocol_waves import Waves, wave_figures
from tokenomy.validation.case_step import step_function
from tokenomy.validation.prepare import METRIC_CODE, SCENARIO_CODE, Serving
from tokenomy.validation.theta import Theta


@dataclass(frozen=True)
class Prediction:
    value: np.ndarray  # in each case's metric unit; NaN where the configuration does not fit
    bound: np.ndarray  # engine.BOUNDS index of the step that dominates the metric
    batch: np.ndarray  # decode batch used
    prefill_tokens: np.ndarray  # interleaved prefill tokens per decode step
    capacity_limited: np.ndarray  # the KV cache, not the workload, set the batch


SERVED = ("concurrency", "request_rate", "max_throughput")  # scenarios predicted by the serving model (steady)


def _load(s: Serving, closed: bool) -> np.ndarray:
    """The clients of a closed loop — C (concurrency), or for max throughput the protocol's one wave of every
    prompt (offline) or, under the steady protocol, the scheduler cap (trtllm-bench queues every request at once) —
    or an open loop's request rate."""
    if not closed:
        return s.rate
    wave = np.where(s.burst > 0, s.prompts, s.cap)
    return np.where(s.scenario == SCENARIO_CODE["concurrency"], s.concurrency, wave)


def _served(s: Serving, th: Theta, closed: bool, arrivals: str = "staggered", step=None) -> steady.Solved:
    """steady.solve on these cases at their load (_load); ``step``: their step function formed already."""
    o_req = np.asarray(th.request_overhead_s, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        pts = steady.Points(isl=s.isl, osl=s.osl, prefill=s.isl, load=_load(s, closed), cap=np.minimum(s.bmax, s.cap),
                            budget=s.budget, whole_prompts=s.whole > 0, request_overhead_s=o_req, poll_steps=s.poll,
                            batch_wait_iters=s.wait_iters, batch_wait_tokens=s.wait_tokens,
                            prompts=np.inf if closed else s.prompts)  # an open loop's finite run (finite_run.py)
        return steady.solve(step or step_function(s, th), pts, closed=closed, arrivals=arrivals)


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
    step = step_function(sk, tk)  # one for both runs: each hardware group's peaks and terms formed once
    tog = _served(sk, tk, True, "together", step)
    w = Waves(_load(sk, True), sk.prompts, sk.isl, sk.osl, sk.budget, sk.whole > 0, sk.locked > 0,
              np.asarray(tk.request_overhead_s, float), sk.median > 0, stag.wait_steps)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = wave_figures(step, w, stag, tog)
    tpot[idx], ttft[idx], X[idx] = f.tpot_s, f.ttft_s, f.requests_per_s
    return tpot, ttft, X


def predict_serving(s: Serving, th: Theta) -> Prediction:
    """Static, prefill and decode runs by the module docstring's formulas; concurrency, request-rate and
    max-throughput runs by the serving model itself (serving.steady.solve, the equations ``tokenomy serve``
    uses), each step timed by the engine on the case's prepared work."""
    sc, me = s.scenario, s.metric
    cases = step_function(s, th)  # the groups' sets formed once for the prompt passes and the decode steps
    pf = cases.time(s.prefill)
    t_pf = pf.step_s
    st = cases.time(s.step)
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
