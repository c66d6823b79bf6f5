"""The simulator's run: what it schedules on (``Capacity``) and its state (``_Run``: per request lists, the queues,
the counters it ends with); the loop that steps it is sim_loop.py's ``run_loop`` (serving/simulator.py's docstring:
arrivals, admission, decodes, prefill chunks, the step's time; runs of pure-decode steps in closed form)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from tokenomy.serving.scheduler import EngineProfile
from tokenomy.serving.sim_blocks import DecodeBlocks
from tokenomy.serving.sim_loop import EPS_S, run_loop
from tokenomy.serving.sim_table import StepTable

__all__ = ["EPS_S", "Capacity", "_Run"]


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
    """The scheduler's state (module docstring). Decoders carry an offset a_r: K_r = a_r + S tokens cached after S
    steps, so their generated tokens, blocks and mean context need no per-step update. ``clients``: the closed
    loop's U (None: open loop); ``need0``: each request's prompt tokens to compute. ``hooks``: None, or the session
    simulator's events (sim_session_run._SessionRun). ``stepwise``: one step per loop turn, no runs taken at once
    (the reference the runs are tested against: tests/serving/test_*stepwise.py)."""

    stepwise = False
    hooks = None
    gate = None  # TensorRT-LLM's delayed batching counter (batch_wait_gate.BatchWaitGate), where it is on

    def __init__(self, cap: Capacity, isl, osl, need0, arrival, clients: int | None):
        N, prof = len(isl), cap.prof
        closed, U = clients is not None, clients or 0
        self.prof, self.closed, self.U, self.table, self.kv = prof, closed, U, cap.table, cap.kv_blocks
        self.blk, self.budget, self.max_batch = int(prof.block_size), int(cap.budget), int(cap.max_batch)
        self.chunked, self.reserve = bool(prof.chunked_prefill), bool(prof.reserve_output)
        self.isl, self.osl, self.need0, self.arrival = isl.tolist(), osl.tolist(), need0.tolist(), arrival
        self.gen, self.done, self.need = [0] * N, [0] * N, list(self.need0)
        self.held = [0] * N  # blocks of a prefilling request (a decoder's are the DecodeBlocks ledger's)
        self.a = [0] * N  # decoder offsets
        self.serial = [-1] * N  # admission serial (orders the heap, dates its entries; -1: not running)
        self.ttft, self.finish, self.first = [np.nan] * N, [np.nan] * N, [np.nan] * N
        self.qlen = [0] * N
        self.full = [-(-(i + o - 1) // self.blk) for i, o in zip(self.isl, self.osl)]  # a whole sequence's blocks
        self.running: dict[int, None] = {}  # admission order
        self.prefilling: dict[int, None] = {}  # admission order
        self.waiting: deque[int] = deque()
        # a heap by (arrival, request): FCFS, ties by index; a NaN arrival is not known yet (a subclass releases it)
        first = [i for i in range(N if not closed else min(U, N)) if arrival[i] == arrival[i]]
        self.pending = sorted((arrival[i], i) for i in first)  # (a sorted list is a heap)
        self.issued, self.N = len(first), N
        self.heap: list[tuple[int, int, int]] = []  # (step it finishes at, serial, request)
        self.dec = DecodeBlocks(self.blk)
        # what run_loop ends with
        self.now, self.S, self.preemptions, self.max_used, self.max_q = 0.0, 0, 0, 0, 0
        self.tokens_out, self.prefilled_tokens = 0, 0

    def loop(self) -> None:
        run_loop(self)
