"""The iteration-level simulator: a loop over scheduler steps, each timed by the one engine.

Each iteration: arrivals join the FCFS queue; the scheduler admits waiting requests while the running set is under
max_batch and their prompt's KV blocks fit (KV admission never exceeds the cache); every running decode takes one
token of the budget, then prefill chunks fill what is left in admission order (whole prompts only when the engine
does not chunk); a decode that needs a new block when none is free preempts the latest-admitted request (recompute:
it re-queues at the front and prefills its prompt and its generated tokens again). The step's time is the engine's
for n decodes at their mean context plus P prefill tokens: the engine is evaluated once, vectorised, over every
batch 0..B_max, a grid of P and of context (scheduler.step_time) and read off by interpolation in P and context.
Runs of pure-decode steps with no arrival, completion or block boundary are taken at once (same times: the table is
linear in context between grid points). Closed loop: each of C clients sends its next request on completion.
Statistics skip the first and last C requests of a closed loop (warm-up and drain) when there are > 3·C.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.scheduler import EngineProfile, kv_tokens, step_time
from tokenomy.serving.workload import Workload, prefill_tokens

P_GRID = 16  # prefill-token grid cells over the budget
C_GRID = 8  # context grid cells


@dataclass(frozen=True)
class Simulation:
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    arrival_s: np.ndarray
    finish_s: np.ndarray
    counted: np.ndarray  # bool: in the statistics window
    steps: int
    preemptions: int
    max_blocks_used: int
    kv_blocks: int
    max_queue: int
    queue_len: np.ndarray  # waiting requests seen by each request at arrival

    def summary(self, chips: int) -> dict:
        c = self.counted
        t, p, e = self.ttft_s[c], self.tpot_s[c], self.e2e_s[c]
        span = float(np.max(self.finish_s) - np.min(self.arrival_s))
        out_tokens = None
        return {"ttft_s": float(np.mean(t)), "tpot_s": float(np.nanmean(p)), "e2e_s": float(np.mean(e)),
                "ttft_p50_s": float(np.percentile(t, 50)), "ttft_p99_s": float(np.percentile(t, 99)),
                "tpot_p50_s": float(np.nanpercentile(p, 50)), "tpot_p99_s": float(np.nanpercentile(p, 99)),
                "requests_per_s": len(self.ttft_s) / span if span > 0 else None, "sim_steps": self.steps,
                "preemptions": self.preemptions, "max_queue": self.max_queue, "sim_requests": len(self.ttft_s),
                **({} if out_tokens is None else {})}

    def goodput(self, ttft_slo, tpot_slo) -> float:
        ok = np.ones(len(self.ttft_s), bool)
        if ttft_slo:
            ok &= self.ttft_s <= ttft_slo
        if tpot_slo:
            ok &= ~(self.tpot_s > tpot_slo)
        span = float(np.max(self.finish_s) - np.min(self.arrival_s))
        return float(np.sum(ok)) / span if span > 0 else 0.0


class StepTable:
    """t(n decodes, context, P prefill tokens): the engine over n = 0..n_max, P and context grids, then bilinear."""

    def __init__(self, dep: Deployment, n_max: int, budget: int, c_lo: float, c_hi: float, pctx: float):
        self.budget, self.c_lo = float(budget), float(c_lo)
        self.dc = max((c_hi - c_lo) / C_GRID, 1.0)
        n = np.arange(n_max + 1, dtype=float)[:, None, None]
        P = np.linspace(0.0, budget, P_GRID + 1)[None, :, None]
        C = (c_lo + self.dc * np.arange(C_GRID + 1))[None, None, :]
        t = np.asarray(step_time(dep, n, C, P, pctx), float)
        self.t = np.where(np.isfinite(t), t, np.inf)
        self.dp = self.budget / P_GRID

    def __call__(self, n: int, ctx: float, P: float) -> float:
        x = min(max((ctx - self.c_lo) / self.dc, 0.0), C_GRID - 1e-9)
        y = min(P / self.dp, P_GRID - 1e-9)
        i, j = int(x), int(y)
        fx, fy = x - i, y - j
        row = self.t[n]
        a = row[j, i] + fx * (row[j, i + 1] - row[j, i])
        b = row[j + 1, i] + fx * (row[j + 1, i + 1] - row[j + 1, i])
        return float(a + fy * (b - a))


def simulate(dep: Deployment, prof: EngineProfile, w: Workload, n_requests: int) -> Simulation:
    """Run ``n_requests`` of workload ``w`` (module docstring); deterministic for a seed."""
    req = w.requests(n_requests)
    N = len(req)
    isl, osl = req.isl.astype(np.int64), req.osl.astype(np.int64)
    need0 = prefill_tokens(isl, w.cache_hit).astype(np.int64)
    blk = prof.block_size
    L_max = int(np.max(isl + osl))
    tok, _, _ = kv_tokens(dep, prof, float(np.ceil(np.mean(isl + osl) / blk) * blk))
    kv_blocks = int(float(tok) * float(dep.layout.dp) // blk)
    budget = prof.max_num_tokens
    n_max = int(min(prof.max_batch, N, kv_blocks))
    table = StepTable(dep, max(n_max, 1), budget, float(np.min(isl)), float(L_max), float(np.mean(isl) * w.cache_hit
                                                                                             + np.mean(need0) / 2.0))
    arrival = np.array(req.arrival_s, float)
    closed = w.closed
    C = int(w.concurrency) if closed else 0
    if closed:
        first = min(C, N)
        if w.arrivals == "together":
            arrival[:first] = 0.0
        else:  # spread over one estimated lifetime
            life = float(np.mean(osl)) * table(min(first, n_max), float(np.mean(isl + osl / 2)), 0.0)
            arrival[:first] = np.arange(first) * life / first
    ttft, finish = np.full(N, np.nan), np.full(N, np.nan)
    gen = np.zeros(N, np.int64)  # tokens generated
    done_pf = np.zeros(N, np.int64)  # prefill tokens computed this admission
    need = need0.copy()  # prefill tokens to compute this admission
    held = np.zeros(N, np.int64)  # KV blocks held
    qlen = np.zeros(N, np.int64)
    waiting: deque[int] = deque()
    running: list[int] = []
    order = list(range(N)) if not closed else list(range(min(C, N)))
    order.sort(key=lambda i: arrival[i])
    pending = deque(order)
    issued = len(order)
    now, free, steps, preempt, max_used, max_q = 0.0, kv_blocks, 0, 0, 0, 0
    finished = 0
    while finished < N:
        while pending and arrival[pending[0]] <= now + 1e-12:
            r = pending.popleft()
            qlen[r] = len(waiting)
            waiting.append(r)
        if not running and not waiting:
            now = float(arrival[pending[0]])
            continue
        while waiting and len(running) < prof.max_batch:  # admission: the prompt's blocks must fit
            r = waiting[0]
            b = -(-(int(isl[r]) + int(gen[r])) // blk)
            if b > free:
                break
            waiting.popleft()
            free -= b
            held[r] = b
            running.append(r)
        max_q = max(max_q, len(waiting))
        dec = [r for r in running if done_pf[r] >= need[r]]
        for r in list(dec):  # KV growth: one token each; preempt the latest admitted when a block is missing
            if isl[r] + gen[r] + 1 > held[r] * blk:
                while free < 1 and running:
                    v = running.pop()
                    free += int(held[v])
                    held[v], done_pf[v] = 0, 0
                    need[v] = int(isl[v]) + int(gen[v])  # recompute the prompt and what it generated
                    waiting.appendleft(v)
                    preempt += 1
                    if v in dec:
                        dec.remove(v)
                if r in running:
                    free -= 1
                    held[r] += 1
        max_used = max(max_used, kv_blocks - free)
        left = budget - len(dec)
        chunks = []
        for r in running:
            if done_pf[r] < need[r] and left > 0:
                c = min(int(need[r] - done_pf[r]), left)
                if not prof.chunked_prefill and c < need[r] - done_pf[r]:
                    break
                chunks.append((r, c))
                left -= c
        P = budget - len(dec) - left
        if not dec and not chunks:
            if pending:
                now = max(now, float(arrival[pending[0]]))
                continue
            raise RuntimeError("simulator: no progress (a prompt larger than the KV cache or the budget)")
        ctx = float(np.mean(isl[dec] + gen[dec])) if dec else 1.0
        k = 1
        if not chunks and dec and not (waiting and len(running) < prof.max_batch):
            g = gen[dec]
            k = int(np.min(osl[dec] - g))
            room = held[dec] * blk - (isl[dec] + g)  # tokens until each needs a new block
            k = max(1, min(k, int(np.min(room)) + 1))
            if pending:
                dt1 = table(len(dec), ctx, 0.0)
                k = max(1, min(k, int(math.ceil((float(arrival[pending[0]]) - now) / dt1))))
        dt = k * table(len(dec), ctx + (k - 1) / 2.0, float(P))
        now += dt
        steps += k
        if k > 1:
            for r in dec:
                held[r] += 0
            gen[dec] += k - 1
            # the block for the k-th token was taken above; the k-1 earlier fit in the room counted
        for r in dec:
            gen[r] += 1
        for r, c in chunks:
            done_pf[r] += c
            if done_pf[r] >= need[r]:
                if gen[r] == 0:
                    gen[r] = 1
                    ttft[r] = now - arrival[r]
        for r in [r for r in running if gen[r] >= osl[r] and done_pf[r] >= need[r]]:
            running.remove(r)
            free += int(held[r])
            held[r] = 0
            finish[r] = now
            finished += 1
            if closed and issued < N:
                arrival[issued] = now
                pending.append(issued)
                issued += 1
    o_req = float(np.asarray(dep.eff.request_overhead_s))  # outside the engine: tokenise, HTTP, detokenise
    ttft, e2e = ttft + o_req, finish - arrival + o_req
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(osl > 1, (e2e - ttft) / (osl - 1), np.nan)
    counted = np.ones(N, bool)
    if closed and N > 3 * C:
        counted[:C] = False
        counted[N - C:] = False
    return Simulation(ttft, tpot, e2e, arrival, finish, counted, steps, preempt, max_used, kv_blocks, max_q, qlen)
