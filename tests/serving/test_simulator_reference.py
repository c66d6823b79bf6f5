"""The fast simulator against a deliberately naive reference: the same scheduling rules, one step at a time, every
request's blocks counted explicitly, no closed forms. Per-request times must agree to float rounding, counts exactly.

The rules (simulator module docstring): arrivals due by now join a FCFS queue; admit in order while under max_batch,
ceil((ISL + max(g − 1, 0)) / b) blocks fit and (chunking) the step's budget has room after the running decodes and
chunks; each decode caches one token (ISL + g − 1 cached) and takes a
block when it has none left, preempting the latest-admitted running request while none is free (the victim
re-queues at the front, to prefill its uncached prompt plus g − 1 tokens); chunks fill the budget left after the
decodes in admission order (whole prompts only, when not chunking); a prompt's last chunk emits the first token.
"""

import math

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.scheduler import EngineProfile
from tokenomy.serving.sim_table import C_GRID, P_GRID, StepTable
from tokenomy.serving.simulator import simulate
from tokenomy.serving.workload import Lengths, Requests, Workload, prefill_tokens


def reference(w, n_requests, prof, table, kv_blocks):
    """One step per loop turn, lists and explicit block counts; returns per-request times and counters."""
    req = w.requests(n_requests)
    N = len(req)
    isl, osl = [int(x) for x in req.isl], [int(x) for x in req.osl]
    need0 = [int(x) for x in prefill_tokens(req.isl, w.cache_hit)]
    b, budget = prof.block_size, prof.max_num_tokens
    arrival = [float(x) for x in req.arrival_s]
    if w.closed:
        C = min(int(w.concurrency), N)
        if w.arrivals == "together":
            arrival[:C] = [0.0] * C
        else:  # over C/B steady-state lifetimes of B running: c chunk steps, OSL - 1 steps carrying B·I/L prefill
            I, O = sum(need0) / N, sum(osl) / N
            B = max(min(C, prof.max_batch, N, kv_blocks // math.ceil((sum(isl) + sum(osl)) / N / b)), 1)
            c = math.ceil(I / max(budget - B, 1))
            L = c + O - 1
            n = round(B * (O - 1) / L)
            ctx = sum(i + o / 2 for i, o in zip(isl, osl)) / N
            life = c * table(n, ctx, min(I, max(budget - n, 0))) + (O - 1) * table(n, ctx, B * I / L)
            arrival[:C] = [j * life / B for j in range(C)]
        pending = list(range(C))
    else:
        pending = list(range(N))
    issued = len(pending)
    gen, held, done, need = [0] * N, [0] * N, [0] * N, list(need0)
    ttft, finish, qlen = [math.nan] * N, [math.nan] * N, [0] * N
    running, waiting = [], []
    now, steps, preempted, max_used, max_q, tokens = 0.0, 0, 0, 0, 0, 0
    while any(math.isnan(f) for f in finish):
        pending.sort(key=lambda r: (arrival[r], r))
        while pending and arrival[pending[0]] <= now + 1e-12:
            r = pending.pop(0)
            qlen[r] = len(waiting)
            waiting.append(r)
        if not running and not waiting:
            now = arrival[pending[0]]
            continue
        free = kv_blocks - sum(held[r] for r in running)
        # a chunking engine admits while the step's budget has room after the running decodes and chunks
        room = budget - sum(1 if done[r] >= need[r] else need[r] - done[r] for r in running)
        while waiting and len(running) < prof.max_batch and (room > 0 or not prof.chunked_prefill):
            r = waiting[0]
            blocks = -(-(isl[r] + max(gen[r] - 1, 0)) // b)
            if blocks > free:
                break
            waiting.pop(0)
            room -= need[r] - done[r]
            running.append(r)
            held[r], free = blocks, free - blocks
        max_q = max(max_q, len(waiting))
        for r in [r for r in running if done[r] >= need[r]]:
            if r not in running or isl[r] + gen[r] - 1 < held[r] * b:
                continue  # preempted already, or room left for the token it caches this step
            while free < 1 and r in running:
                v = running.pop()
                free += held[v]
                held[v], done[v] = 0, 0
                need[v] = need0[v] + max(gen[v] - 1, 0)
                waiting.insert(0, v)
                preempted += 1
            if r in running:
                held[r] += 1
                free -= 1
        max_used = max(max_used, kv_blocks - free)
        decodes = [r for r in running if done[r] >= need[r]]
        left, chunks = budget - len(decodes), []
        for r in running:
            if done[r] >= need[r] or left <= 0:
                continue
            c = min(need[r] - done[r], left)
            if c < need[r] - done[r] and not prof.chunked_prefill:
                break
            chunks.append((r, c))
            left -= c
        if not decodes and not chunks:
            continue  # a request preempted itself: admitted again next turn
        ctx = sum(isl[r] + gen[r] for r in decodes) / len(decodes) if decodes else 1.0
        now += table(len(decodes), ctx, sum(c for _, c in chunks))
        steps += 1
        for r in decodes:
            gen[r] += 1
            tokens += 1
        for r, c in chunks:
            done[r] += c
            if done[r] >= need[r] and gen[r] == 0:
                gen[r], ttft[r] = 1, now - arrival[r]
                tokens += 1
        for r in [r for r in running if done[r] >= need[r] and gen[r] >= osl[r]]:
            running.remove(r)
            held[r], finish[r] = 0, now
            if w.closed and issued < N:
                arrival[issued] = now
                pending.append(issued)
                issued += 1
    return dict(ttft=ttft, finish=finish, arrival=arrival, qlen=qlen, steps=steps, preemptions=preempted,
                max_used=max_used, max_q=max_q, tokens=tokens)


def _random_table(seed, budget, n_max, c_lo, c_hi):
    """A rough positive surface: piecewise linear in context across several cells, so runs cross pieces."""
    rng = np.random.default_rng(seed)
    t = 0.01 + 0.01 * rng.random((n_max + 1, P_GRID + 1, C_GRID + 1))
    return StepTable(t, budget, c_lo, max((c_hi - c_lo) / C_GRID, 1.0))


def _prof(budget, max_batch, block, chunked=True):
    return EngineProfile("ref", "0", chunked, budget, max_batch, block, 0.9, "total")


CASES = [  # (workload, requests, budget, max_batch, block, KV blocks, chunked)
    (Workload(Lengths("uniform", 1, 40), Lengths("uniform", 1, 30), concurrency=3, arrivals="together", seed=1),
     30, 16, 4, 4, 200, True),
    (Workload(Lengths("uniform", 1, 40), Lengths("uniform", 1, 30), concurrency=5, arrivals="staggered", seed=2),
     40, 16, 4, 4, 200, True),
    (Workload(Lengths("uniform", 5, 60), Lengths("uniform", 2, 40), concurrency=6, seed=3), 40, 32, 8, 4, 30, True),
    (Workload(Lengths("uniform", 5, 60), Lengths("uniform", 2, 40), concurrency=8, seed=4), 40, 24, 8, 8, 16, True),
    (Workload(Lengths("uniform", 1, 12), Lengths("uniform", 1, 4), concurrency=4, seed=5), 40, 16, 4, 2, 100, False),
    (Workload(Lengths("uniform", 1, 40), Lengths("uniform", 1, 30), rate=0.5, seed=6), 40, 16, 4, 4, 200, True),
    (Workload(Lengths("uniform", 1, 40), Lengths("uniform", 1, 60), rate=3.0, seed=7), 40, 16, 6, 4, 25, True),
    (Workload(Lengths("lognormal", 3.0, 0.6), Lengths("lognormal", 2.5, 0.7), rate=1.0, cache_hit=0.4, seed=8),
     50, 16, 5, 4, 60, True),
    (Workload(Lengths("fixed", 1), Lengths("fixed", 1), trace=Requests(np.array([0.0, 0.0, 0.0, 0.05, 0.3, 0.3]),
              np.array([9, 30, 3, 17, 8, 8]), np.array([5, 1, 12, 9, 3, 3]))), 6, 16, 3, 4, 14, True),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_fast_simulator_equals_the_naive_reference(case):
    w, n, budget, max_batch, block, kv, chunked = CASES[case]
    prof = _prof(budget, max_batch, block, chunked)
    req = w.requests(n)
    table = _random_table(case, budget, max_batch, float(np.min(req.isl)), float(np.max(req.isl + req.osl)))
    ref = reference(w, n, prof, table, kv)
    s = simulate(None, prof, w, n, table=table, kv_blocks=kv)
    assert s.finish_s == pytest.approx(ref["finish"], rel=1e-9, abs=1e-12)
    assert s.ttft_s == pytest.approx(ref["ttft"], rel=1e-9, abs=1e-12)
    assert s.arrival_s == pytest.approx(ref["arrival"], rel=1e-9, abs=1e-12)
    assert s.queue_len.tolist() == ref["qlen"]
    assert (s.steps, s.preemptions, s.max_blocks_used, s.max_queue, s.tokens_out) == \
        (ref["steps"], ref["preemptions"], ref["max_used"], ref["max_q"], ref["tokens"])


def test_the_reference_cases_exercise_preemption_and_queueing():
    seen = []
    for case, (w, n, budget, max_batch, block, kv, chunked) in enumerate(CASES):
        req = w.requests(n)
        table = _random_table(case, budget, max_batch, float(np.min(req.isl)), float(np.max(req.isl + req.osl)))
        seen.append(reference(w, n, _prof(budget, max_batch, block, chunked), table, kv))
    assert sum(r["preemptions"] > 0 for r in seen) >= 2
    assert sum(r["max_q"] > 0 for r in seen) >= 4


def test_fast_simulator_equals_the_reference_on_the_engine():
    """Llama-3.1-70B on 8 x H100, the engine's own step table, a cache cut to a few sequences."""
    dep = deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(8))
    prof = engine_profile("vllm", 8, max_num_tokens=512, max_batch=12)
    w = Workload(Lengths("uniform", 64, 700), Lengths("uniform", 8, 200), rate=6.0, seed=11)
    req = w.requests(60)
    kv = 120
    table = StepTable.for_deployment(dep, 12, 512, float(np.min(req.isl)), float(np.max(req.isl + req.osl)),
                                     float(np.mean(req.isl)) / 2.0)
    ref = reference(w, 60, prof, table, kv)
    s = simulate(dep, prof, w, 60, table=table, kv_blocks=kv)
    o_req = float(np.asarray(dep.eff.request_overhead_s))
    assert s.finish_s == pytest.approx(ref["finish"], rel=1e-9)
    assert s.ttft_s == pytest.approx(np.array(ref["ttft"]) + o_req, rel=1e-9)
    assert ref["preemptions"] > 0 and s.preemptions == ref["preemptions"] and s.steps == ref["steps"]
