"""A workload on a deployment: the analytic steady state (steady.py, vectorised) and the iteration-level simulator
(simulator.py), both timing every step with the one pass engine (core.engine via Deployment.run).

    workload.py   closed loop (concurrency C) or open loop (rate R), ISL/OSL distributions or a trace, cache hits
    scheduler.py  an engine profile as data (token budget, batch cap, KV blocks, HBM share) and the KV capacity
    steady.py     B = min(C, B_kv, max_batch); TPOT = t(B decodes + P prefill tokens); TTFT, throughput, $
    simulator.py  a loop over engine steps: admission, chunked prefill under the budget, preemption, percentiles
Aggregated mode only for now (prefill and decode share the chips).
"""
