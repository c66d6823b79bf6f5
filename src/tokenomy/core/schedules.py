"""Training pipeline schedules: each schedule's bubble and the micro-batches its first stage holds at the peak.

The backward split (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv 2401.10241 §2.3, Table 1):
every weight GEMM of the forward has two GEMMs of its FLOPs in the backward, one for the input gradient (B) and one
for the weight gradient (W); core attention has no weights, so its backward (2x its forward) is all B; a recomputed
forward runs just before B. From the engine's FLOP split of a stage's forward (core/train_lower.lower_step):
    T_F = t_fwd,   T_W = t_fwd − t_attn,   T_B = t_fwd + t_attn + t_recompute      (T_B + T_W = 2·T_F + recompute)
which is their Table 1 per GPT layer: F = sbh(24h + 4s), B = sbh(24h + 8s), W = sbh·24h.
Idle time of the busiest stage per step, p stages, m micro-batches (work m·(T_F + T_B + T_W)); the bubble fraction
is idle / (work + idle), what core/train_time.timeline divides the chain by:
    gpipe, 1f1b   (p−1)(T_F + T_B + T_W)                 -> (p−1)/(m+p−1)   Narayanan et al. 2021 (2104.04473) §2.2
    interleaved   (p−1)(T_F + T_B + T_W)/v               v model chunks per rank, ibid. §2.2.1
    zb-h1         (p−1)(T_F + T_B) − min(m−1, p−1)·T_W   Qi et al. Table 2: (p−1)(T_F + T_B − T_W) once m >= p
    zb-h2         (p−1)(T_F + T_B) − min(m−1, 2p−2)·T_W  Table 2: (p−1)(T_F + T_B − 2T_W) once m >= 2p−1
    zb-v          as zb-h2, over the rank's two chunks   §6: zero at T_F = T_B = T_W; no closed form is published
    dualpipe      (p/2−1)(F&B + B − 3W)                  DeepSeek-V3 report (2412.19437) Table 2, its B the whole
                  backward: F&B = T_F + T_B + T_W, B = T_B + T_W, W = T_W -> (p/2−1)(T_F + 2T_B − T_W), taken at
                  equal times, (p/2−1)·(2/3)(T_F + T_B + T_W): the engine's split (B above W by the attention and
                  the recompute) moved the one DualPipe case (DeepSeek-V3 on 2,048 H800) from +8.8% to +10.7%, so
                  it waits for a second DualPipe measurement
A zero-bubble schedule moves W passes into the idle slots 1F1B leaves: ZB-H1 the p−1 at the tail, ZB-H2 (extra F
passes in the warm-up) also the p−1 before the first B. With fewer micro-batches than that, m − 1 W passes are
all there is to move: Qi et al. App. H's step (m+p−1)(T_F + T_B) + T_W for m <= p (communication ignored) is
(p−1)(T_F + T_B) − (m−1)·T_W of idle; between m = p and 2p−1 the count grows by one a micro-batch (ours).
ZB-V (two chunks a rank in a V, so each micro-batch's forward and backward start on the same rank) is taken at
ZB-H2's bubble: the paper's bubble rates from profiled T_F, T_B, T_W, T_comm (Table 8, 6.2B-28.3B GPT on 16-32
A100) put it within 0.013 of ZB-H2's in all nine settings (e.g. 28.3B, p 32, m 128: ZB-V 0.0451, ZB-H2 0.0478,
ZB-H1 0.1111, 1F1B 0.2204). All ZB schedules assume the optimizer's post-validation (their §4: without it the
stages synchronise before the step, about 8% slower, App. E). Their Table 9 profiled W at 0.5-0.7 of F on those
GPTs where FLOPs say 0.9 (the non-GEMM kernels run in F and B, not W), so the FLOP split understates a ZB bubble.
Published, measured (Megatron-LM on up to 32 A100 SXM 80G, GPT 1.5B-28.3B, seq 1024): up to 23% more throughput
than 1F1B at about its memory (abstract; ZB-V, Table 6: 6.2B on 16 GPUs, m 48, 4.15 against 3.38 samples/GPU/s at
64 against 61 GB), about 30% with twice the activations (ZB-2p, the schedule searched under 2p·M_B, bubble rate
< 1%; Table 4: 28.3B on 32 GPUs, m 96: ZB-2p 0.99, ZB-1p 0.87, 1F1B-I 0.82, 1F1B 0.76 samples/GPU/s at 74, 44, 58
and 43 GB; about 56% and 43% MFU for ZB-2p and 1F1B by 6N + 12·L·h·s FLOPs a token over 312 TFLOP/s, ours).
ZB-1p, searched under 1F1B's p·M_B, has ZB-H1's bubble rates in Table 5.
With Table 9's profiled times these formulas and the fill/drain hops 2(p−1)·T_comm give Table 5's ZB-H2 column to
its last digit and ZB-1p's measured speedup over 1F1B within 3% (tests/core/test_zero_bubble.py).

Peak activations of the first stage, in micro-batches through its L/p layers (M_B; memory.train_memory):
    gpipe m (Huang et al. 2019); 1f1b min(p, m) (PipeDream-Flush); interleaved min(p + (p−1)/v, m) (Korthikanti et
    al. 2022 §4.2.3); zb-h1 min(p, m) (Table 2: p·M_B, a W holds less than a B); zb-h2 min(2p−1, m) (Table 2:
    (2p−1)·M_B); zb-v min(p, m) (§6: p·M_B, balanced over the ranks); dualpipe min(p+1, m) (DeepSeek-V3 Table 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.refusal import choice

SCHEDULES = ("gpipe", "1f1b", "interleaved", "dualpipe", "zb-h1", "zb-h2", "zb-v")
ZERO_BUBBLE = ("zb-h1", "zb-h2", "zb-v")
# W passes a zero-bubble schedule moves into 1F1B's idle slots, in units of p − 1 (module docstring)
_HIDDEN_W = {"zb-h1": 1.0, "zb-h2": 2.0, "zb-v": 2.0}


def check_schedule(schedule: str) -> str:
    return choice("schedule", schedule, SCHEDULES, "a pipeline schedule")


@dataclass(frozen=True)
class BackwardSplit:
    """A stage's forward F, input-gradient B and weight-gradient W times of one micro-batch (any unit, numbers or
    arrays). The default is the paper's handcrafted assumption T_F = T_B = T_W."""

    f: object = 1.0
    b: object = 1.0
    w: object = 1.0

    @classmethod
    def of(cls, fwd, attention, recompute=0.0) -> "BackwardSplit":
        """From a forward's time and its core-attention part (module docstring): W = fwd − attn, B = fwd + attn +
        recompute."""
        fwd, att = np.asarray(fwd, dtype=float), np.asarray(attention, dtype=float)
        return cls(fwd, fwd + att + np.asarray(recompute, dtype=float), fwd - att)


def chunks_per_rank(schedule: str, virtual_stages=1):
    """Model chunks each pipeline rank holds: v interleaved, 2 for ZB-V (its V), else 1; what the pipeline sends
    and the layer count per chunk scale with."""
    return np.asarray(virtual_stages if schedule == "interleaved" else (2 if schedule == "zb-v" else 1), dtype=float)


def idle_time(schedule: str, stages, microbatches, virtual_stages=1, split: BackwardSplit = BackwardSplit()):
    """The busiest stage's idle time per step (module docstring), in the unit of ``split``."""
    check_schedule(schedule)
    p, m = np.asarray(stages, dtype=float), np.asarray(microbatches, dtype=float)
    F, B, W = (np.asarray(x, dtype=float) for x in (split.f, split.b, split.w))
    if schedule == "dualpipe":  # at equal times, F + 2B - W = (2/3)(F + B + W) (module docstring)
        return np.maximum(p / 2.0 - 1.0, 0.0) * (2.0 / 3.0) * (F + B + W)
    if schedule in ZERO_BUBBLE:
        hidden = np.clip(np.minimum(m - 1.0, _HIDDEN_W[schedule] * (p - 1.0)), 0.0, None)
        return np.maximum((p - 1.0) * (F + B) - hidden * W, 0.0)
    v = np.asarray(virtual_stages if schedule == "interleaved" else 1, dtype=float)
    return (p - 1.0) * (F + B + W) / v


def schedule_bubble(schedule: str, stages, microbatches, virtual_stages=1, split: BackwardSplit = BackwardSplit()):
    """Idle share of a training step: idle / (m·(T_F + T_B + T_W) + idle) (module docstring)."""
    idle = idle_time(schedule, stages, microbatches, virtual_stages, split)
    work = np.asarray(microbatches, dtype=float) * (np.asarray(split.f, dtype=float) + split.b + split.w)
    return idle / (work + idle)


def bubble_formula(schedule: str, stages, microbatches, virtual_stages=1, split: BackwardSplit = BackwardSplit()):
    """The bubble's formula with the numbers plugged in (scalars), for a derivation: '(p-1)/(v*m + p-1) = ...'."""
    p, m, v = int(stages), float(microbatches), int(virtual_stages if schedule == "interleaved" else 1)
    if schedule in ZERO_BUBBLE:
        f, b, w = (float(x) for x in (split.f, split.b, split.w))
        k = "p-1" if schedule == "zb-h1" else "2p-2"
        return (f"idle/(m(T_F + T_B + T_W) + idle), idle = (p-1)(T_F + T_B) - min(m-1, {k})*T_W, T_F:T_B:T_W = "
                f"1:{b / f:.3g}:{w / f:.3g} (the engine's FLOPs), p = {p}, m = {m:g}")
    if schedule == "dualpipe":
        return f"(p/2-1)*2/(3m + (p/2-1)*2) = ({p}/2-1)*2/(3*{m:g} + ({p}/2-1)*2)"
    return f"(p-1)/(v*m + p-1) = ({p}-1)/({v}*{m:g} + {p}-1)"


def in_flight_microbatches(pp, microbatches, schedule="1f1b", virtual_stages=1):
    """Micro-batches whose activations the first stage holds at the peak, in units of its L/p layers (module
    docstring)."""
    check_schedule(schedule)
    p, m = np.asarray(pp, dtype=float), np.asarray(microbatches, dtype=float)
    if schedule == "gpipe":
        return m
    if schedule in ("1f1b", "zb-h1", "zb-v"):
        return np.minimum(p, m)
    if schedule == "zb-h2":
        return np.minimum(2 * p - 1, m)
    if schedule == "dualpipe":
        return np.minimum(p + 1, m)
    return np.minimum(p + (p - 1) / np.asarray(virtual_stages, dtype=float), m)
