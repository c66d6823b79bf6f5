"""The disaggregated simulator's prefill pool: replicas running whole-prompt passes from one FCFS queue.

    replicas  the layout's dp replicas schedule independently; one replica's pass runs on its r = ranks/dp
              attention ranks together (scheduler.scheduler_ranks: the ep ranks of a replica under attention-DP)
    a pass    when a replica is free and prompts wait, it takes them in queue order, rank by rank: whole prompts
              while the rank's computed tokens stay within the budget N (a rank takes at least one), and while the
              pass's KV blocks at ISL fit the replica's cache (at least one prompt) — for fixed lengths the
              analytic model's b_max = r·max(1, floor(N/I)) prompts a replica, capped by the KV at ISL
              (serving.disagg._prefill_terms)
    its time  t(0 decodes, dp·T prefill tokens): the engine's prefill-only step as serving.disagg times a pass
              (scheduler.step_time), each replica carrying T, the tokens of this replica's pass; read off a
              StepTable over the tokens (PASS_CELLS cells: linear between them, as the analytic interpolates
              between whole prompts)
    queueing  a prompt that finds every replica busy waits for the first to finish (the lowest-numbered free
              replica goes first); nothing holds a pass back to fill it (an engine runs what is waiting)
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from tokenomy.serving.scheduler import kv_tokens, rank_chunk, scheduler_ranks
from tokenomy.serving.sim_table import StepTable

PASS_CELLS = 512  # token cells of the pass-time table
EPS_S = 1e-12  # an arrival this close to a pass start is in time for it


class PrefillPool:
    """The pool's queue, its replicas' free times and their passes (module docstring)."""

    def __init__(self, pre, prof, isl: np.ndarray, need: np.ndarray, pctx: float):
        self.dp = int(pre.layout.dp)
        self.ranks = max(int(scheduler_ranks(pre.layout)) // self.dp, 1)
        self.budget = int(prof.max_num_tokens)
        blk = int(prof.block_size)
        kv_tok = float(kv_tokens(pre, prof, math.ceil(float(np.mean(isl)) / blk) * blk)[0])
        self.kv_blocks = max(int(kv_tok // blk), 1)  # per replica
        self.need, self.blocks = need.tolist(), (-(-isl // blk)).tolist()
        top = self.ranks * max(self.budget, int(np.max(need)))
        self.table = StepTable.for_deployment(pre, 0, float(self.dp * top), 1.0, 1.0, pctx, p_cells=PASS_CELLS,
                                              c_cells=1, chunk_tokens=rank_chunk(pre, prof, float(np.mean(need))))
        self.free_at = [0.0] * self.dp
        self.pending: list[tuple[float, int]] = []  # (arrival, request): a heap
        self.queue: deque[int] = deque()
        self.qlen = [0] * len(need)
        self.pass_start_s, self.done_s = [math.nan] * len(need), [math.nan] * len(need)
        self.passes, self.max_queue = 0, 0

    def push(self, t: float, r: int) -> None:
        heapq.heappush(self.pending, (t, r))

    def next_start(self) -> float:
        """When the next pass can start: a replica free and a prompt there (inf when none waits or is due)."""
        if self.queue:
            first = 0.0
        elif self.pending:
            first = self.pending[0][0]
        else:
            return math.inf
        return max(min(self.free_at), first)

    def start(self, t: float) -> list[tuple[int, float]]:
        """Start a pass at ``t`` on the first free replica: [(request, the time its prompt is done)]."""
        pending, queue = self.pending, self.queue
        while pending and pending[0][0] <= t + EPS_S:
            r = heapq.heappop(pending)[1]
            self.qlen[r] = len(queue)
            queue.append(r)
        self.max_queue = max(self.max_queue, len(queue))
        i = min(range(self.dp), key=lambda j: (self.free_at[j] > t + EPS_S, j))
        taken, tokens = self.pack()
        done = t + self.table(0, 1.0, float(self.dp * tokens))
        self.free_at[i] = done
        self.passes += 1
        for r in taken:
            self.pass_start_s[r], self.done_s[r] = t, done
        return [(r, done) for r in taken]

    def pack(self) -> tuple[list[int], int]:
        """The prompts of one pass, in queue order (module docstring), and their computed tokens."""
        queue, need, blocks = self.queue, self.need, self.blocks
        taken, rank, on_rank, total, held = [], 0, 0, 0, 0
        while queue:
            r = queue[0]
            if taken and held + blocks[r] > self.kv_blocks:
                break
            if on_rank and on_rank + need[r] > self.budget:
                rank, on_rank = rank + 1, 0
                if rank == self.ranks:
                    break
            queue.popleft()
            taken.append(r)
            on_rank, total, held = on_rank + need[r], total + need[r], held + blocks[r]
        return taken, total
