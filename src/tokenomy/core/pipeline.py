"""Pipeline parallelism: micro-batches, bubbles, hop latency, and when a rack hop binds (lecture §2.8).

Decode: the global batch B = M·b with at least M = P micro-batches so no stage idles ("proof by visual");
each token passes all P stages and P hops, so a hop of t_hop adds P·t_hop per token (4 x 2.5 ms: 20 -> 30 ms).
Training schedules' bubbles and memory are core/schedules.py's (GPipe/1F1B (P-1)/(M+P-1), interleaved, the
zero-bubble ZB-H1/ZB-H2/ZB-V, DualPipe), re-exported here. DualPipe (DeepSeek-V3 report arXiv 2412.19437 §3.2.1;
github.com/deepseek-ai/DualPipe): micro-batches enter from both ends, each rank holding stage i and stage P-1-i, and
a forward chunk runs paired with a backward chunk so each hides the other's all-to-alls.
Rack-hop criterion: per stage, EP dispatch + combine moves 2·k copies of each token's activations per MoE layer
over scale-up, while the hop moves one copy over scale-out, so
    t_scaleup / t_scaleout = 2·k·ℓ · bw_out/bw_up   ( = 2·k·ℓ/8 for the lecture's 8x)   -- need >= 1
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core.schedules import schedule_bubble


def rack_hop_ratio(experts_per_tok, moe_layers_per_stage, up_bytes_per_s, out_bytes_per_s):
    """The lecture's scale-up/scale-out time ratio per stage; >= 1 means the rack hop is not the bottleneck."""
    return 2.0 * experts_per_tok * moe_layers_per_stage * out_bytes_per_s / up_bytes_per_s  # any units of bw


def min_microbatches(stages):
    """Fewest decode micro-batches that keep every stage busy: one per stage (lecture §2.8)."""
    return np.asarray(stages)


def bubble_fraction(stages, microbatches, interleave=1):
    """Idle share of a training pipeline step: (P-1)/(v·M + P-1) (GPipe/1F1B for v=1; interleaved 1F1B)."""
    return schedule_bubble("interleaved", stages, microbatches, interleave)


def dualpipe_bubble_fraction(stages, microbatches):
    """Idle share of a DualPipe step at T_F = T_B = T_W (core/schedules.py): (P/2-1)·2 against the M·3 of work each
    rank does; P = 16, M = 120 gives 14/374 = 3.7% where 1F1B gives 15/135 = 11.1%."""
    return schedule_bubble("dualpipe", stages, microbatches)


def added_latency_per_token(stages, hop_s):
    """Decode: every token crosses every stage boundary once per step (the ring back included): P·t_hop."""
    P = np.asarray(stages, dtype=float)
    return np.where(P > 1, P * np.asarray(hop_s, dtype=float), 0.0)


@dataclass(frozen=True)
class DecodePipeline:
    """Steady-state decode over P stages with M micro-batches of stage time t_stage and hop t_hop."""

    stages: int
    microbatches: int
    stage_s: float
    hop_s: float

    @property
    def tpot_s(self) -> float:
        """Time between a sequence's tokens: its micro-batch's round trip, or the M micro-batches' work."""
        P, M = self.stages, self.microbatches
        return max(M * self.stage_s, P * self.stage_s + float(added_latency_per_token(P, self.hop_s)))

    @property
    def idle_fraction(self) -> float:
        """Share of time a stage waits: 0 once M >= P and hops are hidden."""
        return 1.0 - self.microbatches * self.stage_s / self.tpot_s

    def timeline(self, steps: int = 1) -> list[tuple[int, int, float, float]]:
        """(stage, micro-batch, start_s, end_s) boxes for ``steps`` decode steps: the lecture's board diagram."""
        out, free = [], [0.0] * self.stages
        ready = [0.0] * self.microbatches
        for _ in range(steps):
            for mb in range(self.microbatches):
                t = ready[mb]
                for s in range(self.stages):
                    start = max(t, free[s])
                    end = start + self.stage_s
                    out.append((s, mb, start, end))
                    free[s] = end
                    t = end + (self.hop_s if self.stages > 1 else 0.0)
                ready[mb] = t
        return out
