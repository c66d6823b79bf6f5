"""The iteration-level simulator: a loop over scheduler steps, each timed by the one engine.

Each step, as vLLM, SGLang and TensorRT-LLM schedule one:
  1. arrivals due by now join the FCFS queue;
  2. admission, in queue order, while the running set is under max_batch and the head's KV blocks fit:
     ceil((ISL + max(g − 1, 0)) / b) blocks of b tokens (g tokens it generated before a preemption); an engine
     that reserves the whole sequence (EngineProfile.reserve_output: TensorRT-LLM's GUARANTEED_NO_EVICT) admits
     only while the running requests' ceil((ISL + OSL − 1)/b) blocks, its own included, fit the cache, so its
     decodes never preempt;
  3. every running decode takes one token of the budget and caches one token: a decode holding K tokens
     (ISL + g − 1) needs a new block when K is a multiple of b; when none is free the latest-admitted request is
     preempted (recompute: its blocks are freed, it re-queues at the front and later prefills its uncached
     prompt and the g − 1 tokens it had cached, then decodes on from g);
  4. prefill chunks fill the rest of the budget in admission order (whole prompts only, when the engine does
     not chunk: its budget is then at least the longest prompt beside max_batch decodes, scheduler.step_budget);
     a prompt's last chunk emits its first token (time to first token);
  5. the step takes t(n decodes at their mean context, P prefill tokens), the engine on a grid
     (sim_table.StepTable); requests that reached their OSL finish and free their blocks.
Runs of pure-decode steps up to the next event (a completion, an arrival, the step that would need more blocks
than are free) are taken at once: the blocks in closed form (sim_blocks.DecodeBlocks), the seconds in closed
form (StepTable.decode_run_s), the same as stepping them one by one.
Closed loop: each of C clients sends its next request when its last completes (all at t = 0 "together", or
spread over one steady-state lifetime "staggered", _lifetime_s); open loop: the workload's Poisson arrivals or a trace's.
Statistics skip the first and last C requests of a closed loop (warm-up and drain) when there are > 3·C.
TTFT and end-to-end times add the request overhead outside the engine (Efficiency.request_overhead_s).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.scheduler import EngineProfile, kv_tokens, pooled_limits, rank_chunk, step_budget
from tokenomy.serving.sim_blocks import DecodeBlocks
from tokenomy.serving.sim_table import C_GRID, P_GRID, StepTable
from tokenomy.serving.workload import Workload, prefill_context, prefill_tokens

__all__ = ["C_GRID", "P_GRID", "Simulation", "StepTable", "simulate"]
MAX_P_CELLS = 128  # prefill cells at most where a kept-whole chunk bends the step (16 attention ranks of 8,192: 1,024)

# measured: peak RSS grows 408-434 B per simulated request (llama-3.1-8b on h100-sxm, ISL 512 / OSL 64, 1e5 -> 4e5
# requests, open loop at 50 requests/s and closed loop at C = 64; ru_maxrss), rounded up: what a run of n needs
BYTES_PER_REQUEST = 512
EPS_S = 1e-12  # an arrival this close to a step boundary is in time for that step


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
    first_token_s: np.ndarray  # absolute time of each request's first token (engine only, no request overhead)
    tokens_out: int  # tokens generated: first tokens plus one per decode per step
    prefill_tokens: int  # prompt (and recomputed) tokens prefilled

    def summary(self, chips: int) -> dict:
        c = self.counted
        t, p, e = self.ttft_s[c], self.tpot_s[c], self.e2e_s[c]
        span = float(np.max(self.finish_s) - np.min(self.arrival_s))
        return {"ttft_s": float(np.mean(t)), "tpot_s": float(np.nanmean(p)), "e2e_s": float(np.mean(e)),
                "ttft_p50_s": float(np.percentile(t, 50)), "ttft_p99_s": float(np.percentile(t, 99)),
                "tpot_p50_s": float(np.nanpercentile(p, 50)), "tpot_p99_s": float(np.nanpercentile(p, 99)),
                "requests_per_s": len(self.ttft_s) / span if span > 0 else None, "sim_steps": self.steps,
                "preemptions": self.preemptions, "max_queue": self.max_queue, "sim_requests": len(self.ttft_s)}

    def goodput(self, ttft_slo, tpot_slo) -> float:
        ok = within_slos(self.ttft_s, self.tpot_s, ttft_slo, tpot_slo)
        span = float(np.max(self.finish_s) - np.min(self.arrival_s))
        return float(np.sum(ok)) / span if span > 0 else 0.0


def within_slos(ttft_s, tpot_s, ttft_slo, tpot_slo) -> np.ndarray:
    """Per request: TTFT within its SLO and TPOT within its own (a request without a TPOT, one token, meets it)."""
    ok = np.ones(len(ttft_s), bool)
    if ttft_slo:
        ok &= ttft_s <= ttft_slo
    if tpot_slo:
        ok &= ~(tpot_s > tpot_slo)
    return ok


def simulate(dep: Deployment, prof: EngineProfile, w: Workload, n_requests: int, *, table: StepTable | None = None,
             kv_blocks: int | None = None) -> Simulation:
    """Run ``n_requests`` of workload ``w`` (module docstring); deterministic for a seed. ``table`` and
    ``kv_blocks`` replace the engine's step times and the KV cache's size (tests, what-ifs)."""
    req = w.requests(n_requests)
    isl, osl = req.isl.astype(np.int64), req.osl.astype(np.int64)
    need0 = prefill_tokens(isl, w.cache_hit).astype(np.int64)
    blk = int(prof.block_size)
    if kv_blocks is None:
        tok = kv_tokens(dep, prof, float(np.ceil(np.mean(isl + osl) / blk) * blk)).tokens
        kv_blocks = int(float(tok) * float(dep.layout.dp) // blk)
    _check_fits(isl, osl, blk, int(kv_blocks))
    max_batch = int(pooled_limits(prof, dep.layout, 0.0, 0.0)[0]) if dep is not None else int(prof.max_batch)
    n_max = int(max(min(max_batch, len(isl), kv_blocks), 1))
    # whole prompts (an engine that does not chunk): the longest fits beside the decodes
    budget = (int(pooled_limits(prof, dep.layout, float(np.max(need0)), float(n_max))[1]) if dep is not None
              else int(step_budget(prof, float(np.max(need0)), float(n_max))))
    if table is None:
        chunk = rank_chunk(dep, prof, float(np.mean(need0)))
        # a chunk kept whole (pipeline, attention-DP) bends t(P) at one chunk: cells no wider than half a chunk there
        cells = P_GRID if chunk is None else max(P_GRID, min(math.ceil(2.0 * budget / float(chunk)), MAX_P_CELLS))
        table = StepTable.for_deployment(dep, n_max, budget, float(np.min(isl)),
                                         float(np.max(isl + osl)),
                                         float(prefill_context(np.mean(isl), w.cache_hit, np.mean(need0))),
                                         p_cells=cells, chunk_tokens=chunk)
    arrival = _first_arrivals(w, req.arrival_s, isl, osl, need0, table, n_max, int(kv_blocks), blk)
    run = _Run(Capacity(prof, budget, max_batch, table, int(kv_blocks)), isl, osl, need0, arrival,
               int(w.concurrency) if w.closed else None)
    run.loop()
    return _result(run, isl, osl, float(np.asarray(dep.eff.request_overhead_s)) if dep is not None else 0.0)


def _check_fits(isl, osl, blk, kv_blocks) -> None:
    """A request that cannot finish even alone: its last step's KV over the whole cache."""
    need_blocks = -(-(isl + osl - 1) // blk)
    i = int(np.argmax(need_blocks))
    if need_blocks[i] > kv_blocks:
        raise ValueError(f"isl, osl: a request of {int(isl[i])} + {int(osl[i])} tokens needs {int(need_blocks[i])} "
                         f"KV blocks of {blk} tokens; the cache holds {kv_blocks}")


def _first_arrivals(w: Workload, arrival_s, isl, osl, need0, table: StepTable, n_max: int, kv_blocks: int,
                    blk: int) -> list:
    """Arrival times: the open loop's (or trace's); a closed loop's first C at 0 or spread over one lifetime."""
    def running_and_lifetime(first: int) -> tuple[int, float]:
        B = max(min(first, n_max, kv_blocks // math.ceil(float(np.mean(isl + osl)) / blk)), 1)
        return B, _lifetime_s(B, isl, osl, need0, table)

    return first_arrivals(w, arrival_s, running_and_lifetime)


def first_arrivals(w: Workload, arrival_s, running_and_lifetime) -> list:
    """Arrival times: the open loop's (or trace's); a closed loop's first C at t = 0 ("together") or spread evenly
    over C/B lifetimes ("staggered"), (B, lifetime) = ``running_and_lifetime(C)``: the requests the deployment runs
    at once and the seconds each holds its place, so B finish per lifetime and the loop starts near its steady
    state. The later requests' arrivals are set when a client's last request finishes."""
    arrival = np.array(arrival_s, float)
    if w.closed:
        first = min(int(w.concurrency), len(arrival))
        if w.arrivals == "together":
            arrival[:first] = 0.0
        else:
            B, life = running_and_lifetime(first)
            arrival[:first] = np.arange(first) * (life / B)
    return arrival.tolist()


def _lifetime_s(B, isl, osl, need0, table: StepTable) -> float:
    """A request's lifetime in the steady state of B running requests (the analytic model's, on the table):
    L = c + OSL − 1 steps (c = ceil(I / (N − B)) prefill chunks), n = B·(OSL − 1)/L decodes and P = B·I/L prefill
    tokens a step, lifetime = c·t(n, min(I, N − n)) + (OSL − 1)·t(n, P). C clients finish B per lifetime, so
    their first arrivals spread over C/B lifetimes start the loop in its steady state; over a shorter time (the
    pure-decode lifetime, without the prefill share) the first prompts queue behind each other and, with fixed
    lengths, stay in lockstep convoys for the whole run."""
    I, O, N = float(np.mean(need0)), float(np.mean(osl)), table.budget
    chunks = math.ceil(I / max(N - B, 1.0))
    L = chunks + O - 1.0
    n = int(round(B * (O - 1.0) / L))
    ctx = float(np.mean(isl + osl / 2))
    return chunks * table(n, ctx, min(I, max(N - n, 0.0))) + (O - 1.0) * table(n, ctx, B * I / L)


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
    the closed loop's C (None: open loop); ``need0``: each request's prompt tokens to compute."""

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
        order = sorted(range(N if not closed else min(C, N)), key=lambda i: arrival[i])
        self.pending = [(arrival[i], i) for i in order]  # a heap by (arrival, request): FCFS, ties by index
        self.issued, self.N = len(order), N
        self.heap: list[tuple[int, int, int]] = []  # (step it finishes at, serial, request)
        self.dec = DecodeBlocks(self.blk)
        self.sum_a = 0
        self.held_pf = 0
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
            fast_forward()

    def arrivals(self) -> None:
        pending, waiting, due = self.pending, self.waiting, self.now + EPS_S
        while pending and pending[0][0] <= due:
            r = heapq.heappop(pending)[1]
            self.qlen[r] = len(waiting)
            waiting.append(r)

    def free(self) -> int:
        return self.kv - self.held_pf - self.dec.held(self.S)

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

    def can_admit(self, free: int) -> bool:
        if not self.waiting or len(self.running) >= self.max_batch:
            return False
        r = self.waiting[0]
        return self.blocks_to_admit(r) <= free and not (self.reserve and self.reserved + self.full[r] > self.kv)

    # -- KV growth and preemption ---------------------------------------------------------------------------------
    def make_room(self) -> None:
        """Blocks for this step's decodes; preempt the latest-admitted request while one is missing."""
        dec, S = self.dec, self.S
        free = self.free()  # kv − held_pf − held(S) (a subclass may count shared blocks once)
        if dec.n <= free or dec.held(S + 1) - dec.held(S) <= free:  # (a decode takes at most one block a step)
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
        used = self.held_pf + self.dec.held(self.S)
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
        """Take the pure-decode steps up to the next event at once (module docstring)."""
        n = self.dec.n
        if n == 0 or (self.prefilling and self._chunk_fits(n)):
            return
        pending, now = self.pending, self.now
        if pending and pending[0][0] <= now + EPS_S:
            return
        free = self.free()
        if self.waiting and self.can_admit(free):
            return
        heap, serial = self.heap, self.serial
        while serial[heap[0][2]] != heap[0][1]:
            heapq.heappop(heap)
        S = self.S
        k = heap[0][0] - S
        ctx = self.sum_a / n + S + 1  # context()
        table = self.table
        if pending:
            k = table.steps_to_reach(n, ctx, pending[0][0] - EPS_S - now, k)
        k = self.dec.steps_within(S, free, k)
        if k < 1:
            return
        if len(self.waiting) > self.max_q:  # the queue each step of the run sees (a preemption may have grown it)
            self.max_q = len(self.waiting)
        self.now = now + table.decode_run_s(n, ctx, k)
        self.S = S + k
        self.tokens_out += n * k
        self.note_used()
        self.complete()

    def _chunk_fits(self, n_dec: int) -> bool:
        """plan_chunks(n_dec) is not empty: the first prefilling request takes a chunk of what the decodes leave."""
        left = self.budget - n_dec
        if left <= 0:
            return False
        r = next(iter(self.prefilling))
        return self.chunked or self.need[r] - self.done[r] <= left


def request_times(arrival, first, finish, osl, o_req: float, closed: bool, C: int):
    """(TTFT, TPOT, end-to-end, counted) per request from the absolute times of its arrival, first token and last:
    TTFT = first − arrival + o_req, e2e = finish − arrival + o_req, TPOT = (e2e − TTFT)/(OSL − 1) (NaN at OSL 1);
    counted: a closed loop's statistics window (module docstring)."""
    arrival, first, finish = (np.array(x, float) for x in (arrival, first, finish))
    ttft, e2e = first - arrival + o_req, finish - arrival + o_req
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(osl > 1, (e2e - ttft) / (osl - 1), np.nan)
    N = len(arrival)
    counted = np.ones(N, bool)
    if closed and N > 3 * C:
        counted[:C] = False
        counted[N - C:] = False
    return ttft, tpot, e2e, counted


def _result(run: _Run, isl, osl, o_req: float) -> Simulation:
    ttft, tpot, e2e, counted = request_times(run.arrival, run.first, run.finish, osl, o_req, run.closed, run.C)
    return Simulation(ttft, tpot, e2e, np.array(run.arrival, float), np.array(run.finish, float), counted, run.S,
                      run.preemptions, run.max_used, run.kv, run.max_q, np.array(run.qlen, np.int64),
                      np.array(run.first, float), run.tokens_out, run.prefilled_tokens)
