"""What a served workload point reads as: its row (aggregated and disaggregated), the simulation's statistics in
it, the SLO verdict, and the checks every serving door makes on what it serves (KV dtype, context window).

    row            serving.steady's values at one load point, $ and energy columns, the goodput by
                   plan_serving.goodput_requests_per_s (the rule plan ranks by)
    with_sim       a simulation's (or a benchmark protocol run's) means and percentiles over the analytic ones; the
                   simulated request rate rescales tokens/s per chip and $ per token where the run does not count them
    slo_verdict    when no point meets the SLOs, the closest and by how much it misses each (an answer, as plan gives)
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.energy_cols import SIM_SCALED
from tokenomy.answers.engines import engine_profile
from tokenomy.answers.requests import RunRequest, WorkloadRequest
from tokenomy.answers.resolve import model_of, weight_dtype_of, within_window
from tokenomy.serving.simulator import BYTES_PER_REQUEST
from tokenomy.serving.steady import bound_name
from tokenomy.serving.workload import Workload
from tokenomy.units import DTYPE_BYTES


def serving_kv_dtype(model, serving_engine: str, weight_dtype=None, kv_dtype=None) -> str:
    """The KV-cache dtype of a served deployment: ``kv_dtype`` where given, else the serving engine's default for
    the checkpoint's weight dtype (catalog/engines/<engine>.toml [kv_dtype]: vLLM and SGLang keep the model's bf16,
    TensorRT-LLM follows an FP8/NVFP4 checkpoint's FP8 cache); "auto" asks for that default by name."""
    if kv_dtype is not None and kv_dtype != "auto":
        if kv_dtype not in DTYPE_BYTES:
            raise ValueError(f"kv_dtype: {kv_dtype!r} is not a dtype; allowed: auto (the engine's), "
                             f"{', '.join(DTYPE_BYTES)}")
        return kv_dtype
    weights = weight_dtype_of(weight_dtype) or model_of(model).quantization.dense
    return engine_profile(serving_engine).kv_dtype_for(weights)


def within_context(m, isl: float, osl: float) -> None:
    """ISL + OSL inside the model's context window: the rule decode and prefill apply to their context."""
    within_window(m, isl + osl, "isl", "ISL + OSL = ")


def dtypes_label(dep) -> str:
    return f"weights {dep.weight_dtype or dep.model.quantization.dense}, KV {dep.kv_dtype}"


def simulations(run_fn, w: WorkloadRequest, run: RunRequest) -> list:
    """One simulation per load point, ``run_fn(workload, n_requests)`` (the aggregated or the disaggregated
    simulator): ``run.requests`` requests (default 2000; a trace: its own), seeded."""
    n_req = run.requests or 2000
    inputs.within_memory("requests", n_req, BYTES_PER_REQUEST, "simulated requests")
    return [run_fn(Workload(w.isl, w.osl, concurrency=x if w.closed else None, rate=None if w.closed else x,
                            cache_hit=w.cache_hit, arrivals=w.arrivals, trace=w.trace, seed=run.seed), n_req)
            for x in w.load]


def _f(x):
    x = float(x)
    return None if x != x else x


def row(dep, prof, s, i, w: WorkloadRequest, sim=None, energy=None) -> dict:
    """Workload point ``i``'s row (aggregated serving); ``energy``: serving_energy's arrays (answers/energy_cols.py)
    for its columns; ``sim``: a simulation or protocol run of that point (``with_sim``)."""
    g = lambda a: _f(np.ravel(a)[i])  # noqa: E731
    out = {"plan": dep.layout.label(), "mode": "agg", "engine": prof.name, **load_of(w, i),
           "ttft_s": g(s.ttft_s), "tpot_s": g(s.tpot_s), "e2e_s": g(s.e2e_s), "ttft_p50_s": g(s.ttft_p50_s),
           "ttft_p99_s": g(s.ttft_p99_s), "tpot_p50_s": g(s.tpot_s), "tpot_p99_s": g(s.tpot_s),
           "requests_per_s": g(s.requests_per_s), "tokens_per_s_per_chip": div(g(s.output_tokens_per_s), dep.chips),
           "tokens_per_s_per_user": div(1.0, g(s.tpot_s)), "usd_per_mtok_input": g(s.usd_per_mtok_input),
           "usd_per_mtok_output": g(s.usd_per_mtok_output), "kv_occupancy": g(s.kv_occupancy),
           "capacity_limited": bool(np.ravel(s.capacity_limited)[i]), "bound": bound_name(np.ravel(s.bound)[i]),
           "running_batch": g(s.batch), "b_kv": g(s.b_kv), "queue_s": g(s.queue_s), "chips": dep.chips}
    out["interactivity"] = out["tokens_per_s_per_user"]  # InferenceX's name: 1/TPOT, tok/s/user
    out.update({k: g(v) for k, v in (energy or {}).items()})
    return with_sim(out, sim, dep.chips, w.slos)


def load_of(w: WorkloadRequest, i: int) -> dict:
    """The row's load fields: ``concurrency`` or ``rate`` at point ``i`` (the other None)."""
    x = float(w.load[i])
    return {"concurrency": x if w.closed else None, "rate": None if w.closed else x}


def with_sim(row: dict, sim, chips: int, slos) -> dict:
    """The row with the simulation's statistics (means and percentiles from its requests) and its goodput by
    plan_serving.goodput_requests_per_s, the rule plan uses too."""
    from tokenomy.answers.plan_serving import goodput_requests_per_s

    if sim is not None:
        analytic = row.get("requests_per_s")
        summary = sim.summary(chips)
        row.update(summary)
        # the simulated request rate carries the tokens per chip and the $ per token with it (same lengths), where
        # the run does not count them itself (a protocol run: its tool's output tokens over its span)
        simulated = row.get("requests_per_s")
        if analytic and simulated:
            k = simulated / analytic
            for key, power in (("tokens_per_s_per_chip", 1), ("usd_per_mtok_input", -1), ("usd_per_mtok_output", -1),
                               *SIM_SCALED.items()):
                if row.get(key) is not None and key not in summary:
                    row[key] *= k ** power
    row["goodput_requests_per_s"] = goodput_requests_per_s(row, *slos, sim)
    return row


def div(a, b):
    return None if a is None or b in (None, 0) else a / b


def slo_verdict(rows, ttft_slo, tpot_slo) -> tuple[tuple[str, ...], dict]:
    """(notes, payload fields) on the SLOs, as plan answers them: when no workload point meets them, a note naming
    the closest point and by how much it misses each SLO (an answer, not an error), and ``closest``/``misses_by``."""
    from tokenomy.answers.plan_serving import closest, misses_by, no_plan_meets

    if (ttft_slo is None and tpot_slo is None) or any(r["goodput_requests_per_s"] for r in rows):
        return (), {}
    near = closest(rows, ttft_slo, tpot_slo)
    return ((no_plan_meets(near, ttft_slo, tpot_slo, "workload point"),),
            {"closest": near, "misses_by": misses_by(near, ttft_slo, tpot_slo)})


def disagg_rows(pre, dec, serving_engine: str, s, w: WorkloadRequest, sims=None, energy=None) -> list[dict]:
    """One row per workload point of disaggregated serving (``s``: serving.disagg's); ``energy``:
    energy_cols.disagg_energy's arrays (each pool's watts: the decode pool's per output token, the prefill pool's
    per input token) for its columns."""
    energy = energy or {}
    rows = []
    for i in range(len(w.load)):
        g = lambda a: _f(np.ravel(np.broadcast_to(a, np.shape(s.tpot_s)))[i])  # noqa: E731
        row = {"plan": f"prefill {pre.layout.label()} | decode {dec.layout.label()}", "mode": "disagg",
               "engine": serving_engine, "prefill_chips": pre.chips, "decode_chips": dec.chips, "chips": s.chips,
               "prefill_plan": pre.layout.as_dict(), "decode_plan": dec.layout.as_dict(),
               **load_of(w, i),
               "ttft_s": g(s.ttft_s), "tpot_s": g(s.tpot_s), "e2e_s": g(s.e2e_s), "ttft_p50_s": g(s.ttft_s),
               "ttft_p99_s": g(s.ttft_s), "tpot_p50_s": g(s.tpot_s), "tpot_p99_s": g(s.tpot_s),
               "prefill_wait_s": g(s.prefill_wait_s), "prefill_pass_s": g(s.prefill_pass_s),
               "prompts_per_pass": g(s.prompts_per_pass), "kv_bytes": s.kv_bytes, "kv_transfer_s": s.kv_transfer_s,
               "kv_link": "scale-out" if s.crosses_domain else "scale-up", "queue_s": g(s.queue_s),
               "requests_per_s": g(s.requests_per_s), "tokens_per_s_per_chip": g(s.tokens_per_s_per_chip),
               "tokens_per_s_per_user": div(1.0, g(s.tpot_s)), "usd_per_mtok_input": g(s.usd_per_mtok_input),
               "usd_per_mtok_output": g(s.usd_per_mtok_output), "kv_occupancy": g(s.kv_occupancy),
               "running_batch": g(s.batch), "decode_cap": s.decode_cap,
               "prefill_capacity_requests_per_s": s.prefill_capacity,
               "decode_capacity_requests_per_s": g(s.decode_capacity),
               "prefill_utilisation": div(g(s.requests_per_s), s.prefill_capacity),
               "decode_utilisation": div(g(s.requests_per_s), g(s.decode_capacity)),
               "capacity_limited": bool(np.ravel(s.capacity_limited)[i]), "bound": bound_name(np.ravel(s.bound)[i])}
        row["interactivity"] = row["tokens_per_s_per_user"]
        row.update({k: g(v) for k, v in energy.items()})
        rows.append(with_sim(row, sims[i] if sims else None, s.chips, w.slos))
    return rows
