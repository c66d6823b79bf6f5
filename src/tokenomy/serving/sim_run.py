"""The simulator's scheduler state and its steps (serving/simulator.py's docstring: arrivals, admission, decodes,
prefill chunks, the step's time; runs of pure-decode steps in closed form): ``_Run`` over a ``Capacity``."""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from tokenomy.serving.scheduler import EngineProfile
from tokenomy.serving.sim_blocks import DecodeBlocks
from tokenomy.serving.sim_table import StepTable

EPS_S = 1e-12  # an arrival this close to a step boundary is in time for that step


@dataclass(frozen=True)
class Capacity:
    """What a run schedules on: the engine's profile, a step's token budget and batch cap, the step-time table and
    the KV pool in blocks."""

    prof: EngineProfile
    budget: int
    max_batch: int
    table: StepTable
    kv_blocks: int


class _Run:
    """The scheduler's state and its steps (module docstring). Decoders carry an offset a_r: K_r = a_r + S tokens
    cached after S steps, so their generated tokens, blocks and mean context need no per-step update. ``clients``:
    the closed loop's C (None: open loop); ``need0``: each request's prompt tokens to compute. ``stepwise``: one
    step per loop turn, no runs taken at once (the reference the runs are tested against)."""

    stepwise = False

    def __init__(self, cap: Capacity, isl, osl, need0, arrival, clients: int | None):
        N, prof = len(isl), cap.prof
        closed, C = clients is not None, clients or 0
        self.prof, self.closed, self.C, self.table, self.kv = prof, closed, C, cap.table, cap.kv_blocks
        self.blk, self.budget, self.max_batch = int(prof.block_size), int(cap.budget), int(cap.max_batch)
        self.chunked = bool(prof.chunked_prefill)
        self.isl, self.osl, self.need0, self.arrival = isl.tolist(), osl.tolist(), need0.tolist(), arrival
        self.gen, self.done, self.need = [0] * N, [0] * N, list(self.need0)
        self.held = [0] * N  # blocks of a prefilling request (a decoder's are the ledger's)
        self.a = [0] * N  # decoder offsets
        self.serial = [-1] * N  # admission serial (orders the heap, dates its entries; -1: not running)
        self.ttft, self.finish, self.first = [np.nan] * N, [np.nan] * N, [np.nan] * N
        self.qlen = [0] * N
        self.running: dict[int, None] = {}  # admission order
        self.prefilling: dict[int, None] = {}  # admission order
        self.waiting: deque[int] = deque()
        # a heap by (arrival, request): FCFS, ties by index; a NaN arrival is not known yet (a subclass releases it)
        first = [i for i in range(N if not closed else min(C, N)) if arrival[i] == arrival[i]]
        self.pending = sorted((arrival[i], i) for i in first)
        self.issued, self.N = len(first), N
        self.heap: list[tuple[int, int, int]] = []  # (step it finishes at, serial, request)
        self.dec = DecodeBlocks(self.blk)
        self.sum_a = 0
        self.held_pf = 0
        self.extra = 0  # blocks the ledgers count twice (a subclass's shared prefixes): free() adds them back
        self.now, self.S, self.serials = 0.0, 0, 0
        self.preemptions, self.max_used, self.max_q, self.finished = 0, 0, 0, 0
        self.tokens_out, self.prefilled_tokens = 0, 0
        self.reserve = bool(prof.reserve_output)
        self.full = [-(-(i + o - 1) // self.blk) for i, o in zip(self.isl, self.osl)]  # a whole sequence's blocks
        self.reserved = 0  # the running requests' whole-sequence blocks (reserve_output)

    # -- the loop -------------------------------------------------------------------------------------------------
    def loop(self) -> None:
        arrivals, admit, make_room, plan_chunks, step, fast_forward = (
            self.arrivals, self.admit, self.make_room, self.plan_chunks, self.step, self.fast_forward)
        running, waiting, dec = self.running, self.waiting, self.dec  # mutated in place, never rebound
        stepwise = self.stepwise
        while self.finished < self.N:
            arrivals()
            if not running and not waiting:
                self.now = self.pending[0][0]
                continue
            admit()
            if len(waiting) > self.max_q:
                self.max_q = len(waiting)
            make_room()
            chunks = plan_chunks(dec.n)
            if not chunks and dec.n == 0:
                self.no_progress()
                continue
            step(chunks)
            if not stepwise:
                fast_forward()

    def arrivals(self) -> None:
        pending, waiting, due = self.pending, self.waiting, self.now + EPS_S
        while pending and pending[0][0] <= due:
            r = heapq.heappop(pending)[1]
            self.qlen[r] = len(waiting)
            waiting.append(r)

    def free(self) -> int:
        """KV blocks free: the pool less the prefilling requests' blocks and the decoders' (plus ``extra``)."""
        return self.kv - self.held_pf - self.dec.held_now + self.extra

    def blocks_to_admit(self, r: int) -> int:
        return -(-(self.isl[r] + max(self.gen[r] - 1, 0)) // self.blk)

    def admit(self) -> None:
        waiting, running = self.waiting, self.running
        if not waiting or len(running) >= self.max_batch:
            return
        free = self.free()
        while waiting and len(running) < self.max_batch:
            r = waiting[0]
            b = self.blocks_to_admit(r)
            if b > free or (self.reserve and self.reserved + self.full[r] > self.kv):
                break
            waiting.popleft()
            free -= b
            self.reserved += self.full[r] if self.reserve else 0
            self.held[r], self.held_pf = b, self.held_pf + b
            running[r] = None
            self.prefilling[r] = None
            self.serial[r] = self.serials
            self.serials += 1

    # -- KV growth and preemption ---------------------------------------------------------------------------------
    def make_room(self) -> None:
        """Blocks for this step's decodes; preempt the latest-admitted request while one is missing."""
        dec, S = self.dec, self.S
        free = self.free()
        if dec.n <= free or dec.held(S + 1) - dec.held_now <= free:  # (a decode takes at most one block a step)
            return
        for r in list(self.running):
            if r not in self.running or self.serial[r] < 0 or r in self.prefilling or (self.a[r] + S) % self.blk:
                continue
            while free < 1 and r in self.running:
                free += self.preempt(next(reversed(self.running)))
            if r in self.running:
                free -= 1

    def preempt(self, v: int) -> int:
        """Recompute: free v's blocks (returned), re-queue it at the front to prefill what it had cached again."""
        S = self.S
        if v in self.prefilling:
            freed = self.held[v]
            self.held_pf -= freed
            del self.prefilling[v]
        else:
            a = self.a[v]
            freed = -(-(a + S) // self.blk)
            self.gen[v] = a + S - self.isl[v] + 1
            self.dec.remove(a)
            self.sum_a -= a
        del self.running[v]
        self.reserved -= self.full[v] if self.reserve else 0
        self.serial[v] = -1
        self.need[v], self.done[v] = self.need0[v] + max(self.gen[v] - 1, 0), 0
        self.waiting.appendleft(v)
        self.preemptions += 1
        return freed

    # -- one step -------------------------------------------------------------------------------------------------
    def plan_chunks(self, n_dec: int) -> list[tuple[int, int]]:
        """Prefill chunks in admission order under what the decodes leave of the budget."""
        left, chunks, need, done = self.budget - n_dec, [], self.need, self.done
        for r in self.prefilling:
            if left <= 0:
                break
            rem = need[r] - done[r]
            c = rem if rem < left else left
            if c < rem and not self.chunked:
                break
            chunks.append((r, c))
            left -= c
        return chunks

    def context(self) -> float:
        """The decodes' mean context (ISL + generated), the step's attention length."""
        n = self.dec.n
        return self.sum_a / n + self.S + 1 if n else 1.0

    def step(self, chunks) -> None:
        P = 0
        for _, c in chunks:
            P += c
        n = self.dec.n
        self.now += self.table(n, self.sum_a / n + self.S + 1 if n else 1.0, P)  # at context()
        self.S += 1
        self.dec.at(self.S)
        self.tokens_out += n
        self.prefilled_tokens += P
        self.note_used()
        done, need = self.done, self.need
        for r, c in chunks:
            done[r] += c
            if done[r] >= need[r]:
                self.prefilled(r)
        self.complete()

    def prefilled(self, r: int) -> None:
        """r's prompt is in the cache: its first token (unless recomputing), then it decodes (or is done)."""
        del self.prefilling[r]
        self.held_pf -= self.held[r]
        g = self.gen[r]
        if g == 0:
            g = self.gen[r] = 1
            self.tokens_out += 1
            self.first[r] = self.now
            self.ttft[r] = self.now - self.arrival[r]
        if g >= self.osl[r]:
            self.serial[r] = -1
            self.retire(r)
            return
        a = self.isl[r] + g - 1 - self.S
        self.a[r] = a
        self.dec.add(a)
        self.sum_a += a
        heapq.heappush(self.heap, (self.S + self.osl[r] - g, self.serial[r], r))

    def note_used(self) -> None:
        used = self.held_pf + self.dec.held_now
        if used > self.max_used:
            self.max_used = used

    def complete(self) -> None:
        heap, S, serial = self.heap, self.S, self.serial
        while heap and heap[0][0] <= S:
            _, ser, r = heapq.heappop(heap)
            if serial[r] != ser:
                continue  # preempted since
            a = self.a[r]
            self.dec.remove(a)
            self.sum_a -= a
            serial[r] = -1
            self.gen[r] = self.osl[r]
            self.retire(r)

    def retire(self, r: int) -> None:
        del self.running[r]
        self.reserved -= self.full[r] if self.reserve else 0
        self.finish[r] = self.now
        self.finished += 1
        if self.closed and self.issued < self.N:
            self.arrival[self.issued] = self.now
            heapq.heappush(self.pending, (self.now, self.issued))
            self.issued += 1

    def no_progress(self) -> None:
        """Nothing to run this step: jump to the next arrival, retry after a preemption, or say why not."""
        if self.waiting and not self.running:
            if self.blocks_to_admit(self.waiting[0]) <= self.kv:
                return  # a request preempted itself: it is admitted again next step
        elif not self.running and self.pending:
            self.now = max(self.now, self.pending[0][0])
            return
        raise ValueError("max_num_tokens: no request can be scheduled (a preempted request's prompt and generated "
                         "tokens exceed the step budget of an engine that does not chunk prefill)")

    # -- runs of pure-decode steps --------------------------------------------------------------------------------
    def fast_forward(self) -> None:
        """Take the pure-decode steps up to the next event at once, and on past each event after which the loop's
        next step would again be pure decode (module docstring): an arrival that cannot be admitted, a completion
        that frees nothing the queue's head can use. The checks are the loop's own (arrivals, admit, make_room,
        plan_chunks), so the steps and their order are those of stepping."""
        heap, serial, pending, table, dec, waiting = (self.heap, self.serial, self.pending, self.table, self.dec,
                                                      self.waiting)
        while True:
            n = dec.n
            if n == 0 or (self.prefilling and self._chunk_fits(n)):
                return
            if pending and pending[0][0] <= self.now + EPS_S:
                self.arrivals()
            if waiting:  # admission, as the loop's would be: a request admitted ends the run
                serials = self.serials
                self.admit()
                if self.serials != serials:
                    return
            S = self.S
            while serial[heap[0][2]] != heap[0][1]:
                heapq.heappop(heap)
            k = dec.steps_within(S, self.free(), heap[0][0] - S)  # make_room: the blocks of each step fit
            if k < 1:
                return
            if len(waiting) > self.max_q:  # the queue each step of the run sees (a preemption may have grown it)
                self.max_q = len(waiting)
            now = self.now
            T = pending[0][0] - EPS_S - now if pending else math.inf
            k, run_s = table.decode_run(n, self.sum_a / n + S + 1, T, k)  # at context()
            self.now = now + run_s
            self.S = S = S + k
            dec.at(S)
            self.tokens_out += n * k
            self.note_used()
            if heap[0][0] <= S:
                self.complete()

    def _chunk_fits(self, n_dec: int) -> bool:
        """plan_chunks(n_dec) is not empty: the first prefilling request takes a chunk of what the decodes leave."""
        left = self.budget - n_dec
        if left <= 0:
            return False
        r = next(iter(self.prefilling))
        return self.chunked or self.need[r] - self.done[r] <= left
