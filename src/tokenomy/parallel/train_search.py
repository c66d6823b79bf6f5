"""The fastest training layout that fits: a model, a chip count, a global batch and a sequence length in, the
layouts (TP, CP, PP, DP, EP, pipeline schedule, recompute) that fit, each timed by core.training.train_step
(answers.objectives.FASTEST_TRAIN_STEP ranks them: answers/train_layouts.py).

Candidates: tp a power of two up to the scale-up domain and dividing the heads; pp a power of two up to 16 (and
the layers); cp 1, or up to 4 for sequences of 16K and more; dp the rest; for MoE models ep every power of two
from 8 that divides the routed experts and dp·cp (and 1); schedules 1F1B, interleaved (2, 4 or 8 chunks per rank),
DualPipe and the zero-bubble ZB-H1, ZB-H2 and ZB-V (core/schedules.py) where pp > 1; for MoE layouts with ep > 1, each schedule but DualPipe (which hides the EP all-to-alls
itself) also with the EP all-to-alls overlapped (ep_overlap 1: Megatron-Core's combined 1F1B,
--overlap-moe-expert-parallel-comm, Megatron-Bridge's moe_a2a_overlap, which Megatron refuses with full recompute and
without virtual stages when pipelined: interleaved, or pp 1); for each, the cheapest recompute that fits (none,
selective, modules for MLA models, full), since more recompute only adds work. Micro-batches of one sequence, ZeRO-1.
About 30 ms a candidate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.train_time import TrainEfficiency
from tokenomy.core.training import Lowering, TrainPlan, TrainStep, plan_problems, train_step
from tokenomy.specs import Hardware


@dataclass(frozen=True)
class TrainSearch:
    """What to search: the run's fixed facts; ``lowering``: how core.training.lower_step lowers each plan."""

    chips: int
    global_batch: int
    seq_len: int
    moe_kernels: str = "unfused"
    lowering: Lowering = Lowering()
    attention_kernel: str = "fused"  # core/attention_kernel.py
    fp8_scaling: str = "fused"  # core/fp8_casts.py


# (schedule, virtual stages) tried on a pipeline: 1F1B, interleaved, DualPipe and the zero-bubble ones
SCHEDULE_TRIES = (("1f1b", 1), ("interleaved", 2), ("interleaved", 4), ("interleaved", 8), ("dualpipe", 1),
                  ("zb-h1", 1), ("zb-h2", 1), ("zb-v", 1))


def _pow2(limit: int) -> list[int]:
    return [2 ** k for k in range(int(np.log2(max(limit, 1))) + 1)]


def _ep_overlaps(ep: int, pp: int, schedule: str) -> tuple[float, ...]:
    """The EP overlaps tried (module docstring): 0, and 1 where Megatron-Core runs its combined 1F1B (ep > 1, and
    interleaved stages when pipelined); DualPipe hides the all-to-alls whatever it is told (core.training)."""
    combined = ep > 1 and (pp == 1 or schedule == "interleaved")
    return (0.0, 1.0) if combined else (0.0,)


def candidates(m: ModelArch, hw: Hardware, q: TrainSearch) -> list[TrainPlan]:
    """Every layout of the module docstring that divides the chips and the batch (recompute still open)."""
    heads = m.layers[0].attention.num_heads
    moe = next((ly.mlp for ly in m.layers if ly.mlp.kind == "moe"), None)
    out = []
    for tp in (t for t in _pow2(min(8, hw.topology.domain_size)) if heads % t == 0):
        for cp in (c for c in _pow2(4 if q.seq_len >= 16384 else 1)):
            for pp in (p for p in _pow2(16) if p <= m.num_layers):
                dp, rest = divmod(q.chips, tp * cp * pp)
                if rest or dp < 1 or q.global_batch % dp:
                    continue
                eps = [1] + ([e for e in _pow2(dp * cp) if e >= 8 and moe.num_experts % e == 0] if moe else [])
                for ep in eps:
                    for schedule, v in SCHEDULE_TRIES:
                        chunks = 2 if schedule == "zb-v" else v
                        if (pp == 1 and schedule != "1f1b") or pp * chunks > m.num_layers + 2:
                            continue
                        for overlap in _ep_overlaps(ep, pp, schedule):
                            out.append(TrainPlan(dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, schedule=schedule,
                                                 virtual_stages=v, seq_len=q.seq_len, global_batch=q.global_batch,
                                                 moe_kernels=q.moe_kernels, recompute="none", ep_overlap=overlap,
                                                 attention_kernel=q.attention_kernel, fp8_scaling=q.fp8_scaling))
    return out


def fitting(m: ModelArch, hw: Hardware, q: TrainSearch,
            efficiency: TrainEfficiency) -> list[tuple[TrainPlan, TrainStep]]:
    """Every candidate layout with the cheapest recompute that fits, and its step (module docstring); the choice
    among them is answers.objectives.FASTEST_TRAIN_STEP's (answers/train_layouts.py)."""
    mla = any(ly.attention.kind == "mla" for ly in m.layers)
    strategies = ("none", "selective", *(("modules",) if mla else ()), "full")
    found = []
    for plan in candidates(m, hw, q):
        for strategy in strategies[:-1] if plan.ep_overlap else strategies:  # EP overlap: no full recompute
            p = TrainPlan(**{**plan.__dict__, "recompute": strategy})
            if plan_problems(m, p):
                break
            st = train_step(m, hw, p, efficiency=efficiency, lowering=q.lowering)
            if bool(np.all(st.fits)):
                found.append((p, st))
                break
    return found
