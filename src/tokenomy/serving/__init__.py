"""A workload on a deployment: the analytic steady state (steady.py, vectorised) and the iteration-level simulator
(simulator.py), both timing every step with the one pass engine (core.engine via Deployment.run).

    workload.py        closed loop (concurrency U) or open loop (rate λ), ISL/OSL distributions or a trace, cache hits
    engine_profile.py  an engine profile as data (token budget, batch cap, KV blocks, HBM share) and its step limits
    kv_capacity.py     the KV capacity of a deployment under a profile (B_kv)
    scheduler.py       the time of one scheduler step on the pass engine (StepTimer); re-exports the two above
    steady_solve.py    the steady-state equations over any step-time function (solve): B, TPOT, TTFT, throughput
    steady.py          solve on a Deployment: rates, $, KV occupancy, busy shares, replicas combined
    simulator.py       a loop over engine steps: admission, chunked prefill under the budget, preemption, percentiles
Aggregated mode only for now (prefill and decode share the chips).
"""
