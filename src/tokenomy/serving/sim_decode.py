"""The disaggregated simulator's decode pool: continuous batching of decodes only, KV reserved at admission.

    arrival    a request joins the FCFS admission queue when its KV has landed (prefill done + the hand-off)
    admission  at each step, in queue order, while the running set is under min(max_batch, N)·ranks (the analytic
               pool's cap, serving.disagg.decode_slots) and the request's whole KV fits: ceil((ISL + OSL − 1)/b)
               blocks of b tokens reserved at once (what it caches by its last token), so a running decode never needs
               a block that is not there — no preemption, whose recompute would send the prompt back to the prefill
               pool;
               for fixed lengths the running set is then capped at the analytic pool's B_kv
    a step     n running decodes at their mean context, t(n, context, 0) (scheduler.step_time on a StepTable, as the
               analytic decode pool's TPOT); each emits one token: a request's first token at the end of its first
               step (the analytic TTFT's "first decode step"), its last after OSL steps
    runs       pure-decode steps up to the next event (a completion, a known arrival, the caller's horizon) are
               taken at once (StepTable.decode_run_s), as the aggregated simulator takes them
Decoder r admitted before step S0 caches K_r = a_r + S tokens after step S, a_r = ISL_r − S0 (the aggregated
simulator's offsets), so the mean context sum(a_r)/n + S + 1 needs no per-step update.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from tokenomy.serving.disagg import decode_slots
from tokenomy.serving.scheduler import kv_tokens
from tokenomy.serving.sim_table import StepTable

EPS_S = 1e-12  # an arrival this close to a step boundary is in time for that step


class DecodePool:
    """The pool's admission queue, running set, KV ledger and steps (module docstring)."""

    def __init__(self, dec, prof, isl: np.ndarray, osl: np.ndarray, table: StepTable | None = None,
                 kv_blocks: int | None = None):
        from tokenomy.serving.simulator import _check_fits

        blk = int(prof.block_size)
        if kv_blocks is None:
            tok = float(kv_tokens(dec, prof, math.ceil(float(np.mean(isl + osl)) / blk) * blk)[0])
            kv_blocks = int(tok * float(dec.layout.dp) // blk)
        _check_fits(isl, osl, blk, int(kv_blocks))
        self.kv, self.used, self.max_used = int(kv_blocks), 0, 0
        self.need = (-(-(isl + osl - 1) // blk)).tolist()
        self.cap = int(decode_slots(prof, dec.layout))
        n_max = int(max(min(self.cap, len(isl), self.kv // int(np.min(self.need))), 1))
        self.table = table or StepTable.for_deployment(dec, n_max, 1.0, float(np.min(isl)), float(np.max(isl + osl)),
                                                       1.0, p_cells=1)
        self.isl, self.osl = isl.tolist(), osl.tolist()
        N = len(isl)
        self.a, self.first, self.finish = [0] * N, [math.nan] * N, [math.nan] * N
        self.pending: list[tuple[float, int]] = []  # (arrival, request): a heap
        self.waiting: deque[int] = deque()
        self.heap: list[tuple[int, int]] = []  # (step it finishes at, request)
        self.fresh: list[int] = []  # admitted since the last step
        self.now, self.S, self.n, self.sum_a = 0.0, 0, 0, 0
        self.max_queue, self.tokens_out = 0, 0

    def push(self, t: float, r: int) -> None:
        heapq.heappush(self.pending, (t, r))

    def next_time(self) -> float:
        """When the pool next steps: now while it runs or a request waits, else the next arrival (inf: none)."""
        if self.n or self.waiting:
            return self.now
        return max(self.now, self.pending[0][0]) if self.pending else math.inf

    def admit(self) -> bool:
        """Arrivals due join the queue; admit from its head while the batch cap and the KV allow. Any admitted?"""
        pending, waiting = self.pending, self.waiting
        while pending and pending[0][0] <= self.now + EPS_S:
            waiting.append(heapq.heappop(pending)[1])
        self.max_queue = max(self.max_queue, len(waiting))
        while waiting and self.n < self.cap and self.used + self.need[waiting[0]] <= self.kv:
            r = waiting.popleft()
            self.used += self.need[r]
            a = self.isl[r] - self.S
            self.a[r], self.sum_a, self.n = a, self.sum_a + a, self.n + 1
            heapq.heappush(self.heap, (self.S + self.osl[r], r))
            self.fresh.append(r)  # its first token comes with the next step
        self.max_used = max(self.max_used, self.used)
        return bool(self.fresh)

    def advance(self, horizon: float) -> list[tuple[int, float]]:
        """One step, or a run of pure-decode steps that all start before ``horizon`` (the next pass of the prefill
        pool, whose prompts may land later); returns [(request, finish time)] of those that finished."""
        self.now = self.next_time()
        fresh = self.admit()
        n = self.n
        ctx = self.sum_a / n + self.S + 1
        k = 1
        if not fresh:  # a run to the next completion, arrival or horizon
            k = self.heap[0][0] - self.S
            if self.pending:
                k = self.table.steps_to_reach(n, ctx, self.pending[0][0] - EPS_S - self.now, k)
            if horizon < math.inf:
                k = self.table.steps_to_reach(n, ctx, horizon - self.now, k)
        self.now += self.table.decode_run_s(n, ctx, k)
        self.S += k
        self.tokens_out += n * k
        for r in self.fresh:
            self.first[r] = self.now
        self.fresh.clear()
        return self.complete()

    def complete(self) -> list[tuple[int, float]]:
        done, heap = [], self.heap
        while heap and heap[0][0] <= self.S:
            _, r = heapq.heappop(heap)
            self.finish[r] = self.now
            self.used -= self.need[r]
            self.sum_a -= self.a[r]
            self.n -= 1
            done.append((r, self.now))
        return done
