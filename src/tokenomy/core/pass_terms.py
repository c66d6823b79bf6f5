"""What one pass costs, as the pass engine answers it (core/times.py forms it): ``PassTerms``, arrays over the
broadcast grid — the stage's terms (compute, memory, comms, overhead), the stage and the step, memory per chip by
what it holds, the binding term and why a point has no time — with the splits, the critical path's parts and the
rates read on first use.

    bound          the largest of compute, memory, comms, overhead and the hops per stage (``BOUNDS`` order, a later
                   term only where strictly larger)
    busy shares    u = min(1, M·t/step) for the kernels' compute, their HBM time plus launch floors, and the links
    rates          tokens/s = B·S/step, per chip /n, per user S/step; MFU = FLOPs/(n·peak)/step
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


def _masked(i: int) -> cached_property:
    """A PassTerms time read on first use: part ``i`` of its ``unmasked`` seconds plus its NaN mask."""
    return cached_property(lambda terms: terms.unmasked[i] + terms.nan)


def _on_path(i: int) -> cached_property:
    """A PassTerms critical-path part read on first use: part ``i`` of its ``path`` seconds plus its NaN mask."""
    return cached_property(lambda terms: terms.path[i] + terms.nan)


@dataclass(frozen=True)
class PassTerms:
    """Arrays over the broadcast grid. Times per stage and micro-batch unless named otherwise; NaN where invalid.
    The splits of the memory and comms terms, the hop and the rates are derived on first read (``cached_property``):
    the sweep and the serving model read a few of them, and each is a grid-sized array."""

    chips: object
    batch: object
    context: object
    len_pass: object
    micro_batch: object  # sequences per micro-batch on the busiest replica
    flops: object  # the whole pass, all chips (model FLOPs)
    attention_flops: object  # the part spent in q·k and p·v, all chips
    compute_s: object
    memory_s: object
    comms_s: object
    overhead_s: object
    stage_s: object
    hops: object
    step_s: object  # TPOT in decode; the whole pass otherwise
    weight_bytes_per_chip: object  # resident
    kv_bytes_per_chip: object
    act_bytes_per_chip: object
    hbm_bytes: object  # usable per chip
    expert_rows: object  # GEMM rows per routed expert on the busiest rank
    experts_read: object  # distinct routed experts read per MoE layer on the busiest rank
    rack_hop_ratio: object
    reason: object  # index into REASONS; 0 = valid and fits
    nan: object = field(repr=False, default=0.0)  # 0 where the point is valid and fits, NaN elsewhere
    unmasked: tuple = field(repr=False, default=())  # (weights read, KV, activations, one hop, TP, EP) seconds
    flops_per_s: object = field(repr=False, default=None)  # the chip's peak, for the MFU
    hop_share_s: object = field(repr=False, default=None)  # the pipeline hops per stage (None: no hops)
    floor_s: object = field(repr=False, default=0.0)  # the kernels' launch floors f·K·κ·(1 + ε): GPU busy, in overhead
    microbatches: object = field(repr=False, default=1.0)  # M: a stage's chip runs M micro-batches a period
    # the stage's critical path beside its terms (module docstring): phi·min(compute, memory), the EP seconds two-batch
    # overlap hides, the host's work and the part of it hidden under the GPU (the kernels' floor: floor_s)
    path: tuple = field(repr=False, default=())

    @cached_property
    def bound(self):
        """Index into BOUNDS of the binding term; read on first use: a step timed only for its seconds
        (the serving model's ceil batch) never forms it."""
        others = ((2, self.comms_s), (3, self.overhead_s)) + (() if self.hop_share_s is None else
                                                               ((4, self.hop_share_s),))
        bound = np.where(np.greater_equal(self.compute_s, self.memory_s), 0, 1)  # NaN: memory
        top = np.maximum(self.compute_s, self.memory_s)
        for i, t in others:  # a later term binds where it is strictly larger than all before it
            bound = np.where(t > top, i, bound)
            top = np.maximum(top, t)
        return bound

    @cached_property
    def memory_per_chip_bytes(self):
        return self.weight_bytes_per_chip + self.kv_bytes_per_chip + self.act_bytes_per_chip

    weights_read_s = _masked(0)  # the memory term split by what is read
    kv_s = _masked(1)
    act_s = _masked(2)
    hop_s = _masked(3)  # one pipeline hop
    tp_comm_s = _masked(4)  # the comms term split by what it carries
    ep_comm_s = _masked(5)  # exposed: what two-batch overlap leaves on the critical path
    # stage = max(compute, memory) + overlap + tp_comm + ep_comm + floor_s + host_work − host_hidden (times())
    overlap_s = _on_path(0)  # phi·min(compute, memory): the smaller term's part the kernels do not hide
    ep_hidden_s = _on_path(1)  # eps·min(EP, max(compute, memory)): hidden by two-batch overlap (not in ep_comm_s)
    host_work_s = _on_path(2)  # o_step + o_seq·b_a: the scheduler's CPU work
    host_hidden_s = _on_path(3)  # h·min(GPU, host): the host work hidden under the GPU

    @cached_property
    def pipeline_s(self):
        """The pass beyond one stage: step − stage (the other stages, micro-batches and hops)."""
        return self.step_s - self.stage_s

    # the rates divide the small factors first, then the grid-sized step once (one pass over the grid each)
    @cached_property
    def tokens_per_s(self):
        return self.batch * self.len_pass / self.step_s

    @cached_property
    def tokens_per_s_per_chip(self):
        return (self.batch * self.len_pass / self.chips) / self.step_s

    @cached_property
    def tokens_per_s_per_user(self):
        return self.len_pass / self.step_s

    @cached_property
    def mfu(self):
        return self.flops / (self.chips * self.flops_per_s) / self.step_s

    def busy_shares(self):
        """(u_compute, u_hbm, u_link): the share of a period each unit of a stage's chip is busy, min(1, M·t/step)
        with t its kernels' compute time, its HBM time plus the kernels' launch floors (GPU time at full clocks),
        and its TP/EP communication; the load econ/energy.py turns into watts. NaN where the point has no time."""
        M, step = self.microbatches, self.step_s
        with np.errstate(divide="ignore", invalid="ignore"):
            return tuple(np.clip(M * t / step, 0.0, 1.0) for t in (self.compute_s, self.memory_s + self.floor_s,
                                                                  self.comms_s))

    @property
    def ok(self):
        return np.asarray(self.reason) == 0

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.reason)
