"""A training step: FLOPs, compute, communication, pipeline bubble, memory per chip; time and $ on D tokens.

The FLOPs and the compute come from the one pass engine (core/engine.py), over the same ops and the same layout:
    forward of a micro-batch = engine.work of a prefill pass (len_pass = context = s) on the training layout
    backward = 2 x forward;  recompute (Korthikanti et al. 2022 arXiv 2205.05198 §5): selective +1 attention
    forward (Work.attention_flops), full / reversible +1 whole forward
so hardware FLOPs = 3·F + recompute with F = 2·N_active·T + attention(causal, what the kernels execute), and
t_compute = engine.times(...).compute_s of the busiest chip (busiest stage ceil(L/p) layers, busiest EP rank).
N_active = the weights one token multiplies by (dense + k routed experts + LM head; the input embedding is a
gather); total parameters set the memory and the gradient traffic, never the FLOPs. Model FLOPs, the MFU
numerator (Kaplan et al. 2020 arXiv 2001.08361 §2.1; PaLM, Chowdhery et al. 2022 arXiv 2204.02311 App. B):
    model = 6·N_active + 3·attention_forward(convention)
convention "causal" = the engine's attention; "full" = every query costs what the sequence's last one does,
A(s) - A(s-1) per token with A(n) the engine's attention of a pass of n tokens (PaLM's 12·L·H·Q·T, Megatron's
and torchtitan's); "none" = 6N only.
Step time: core/train_time.py times the step's parts (lower_step: compute at peak split into dense and routed
expert GEMMs, TP/EP/CP/DP/PP communication, the pipeline bubble) under training efficiency terms (η, φ, F_½):
    t_step = (t_compute + t_TP + t_EP,exposed + t_CP,exposed) / (1 - bubble) + t_DP,exposed + t_PP,exposed
    MFU = model FLOPs / (t_step · chips · peak)
``tokenomy train`` uses the chip's fitted terms (catalog/efficiency/<chip>.toml, fitted on the validation
catalog's training cases by tokenomy.validation) with the roofline step beside it; the validation predicts every
training case through this same lowering and timeline. With ``mfu`` given, t_step = model FLOPs /
(chips · peak · mfu) and the modelled terms are shown beside it; an MFU above the layout's cap (the MFU of the
roofline step) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.memory import TrainMemory
from tokenomy.core.schedules import BackwardSplit
# the parts of a step, split by meaning and re-exported here: its FLOPs, its plan, its lowering
from tokenomy.core.train_flops import (ATTENTION_CONVENTIONS, TrainFlops, attention_positions,  # noqa: F401
                                       check_attention, train_flops_per_token, up_projection_flops)
from tokenomy.core.train_lower import Lowering, LoweredStep, bf16_tail, ep_overlap_of, lower_step  # noqa: F401
from tokenomy.core.train_plan import MOE_KERNELS, TrainPlan, plan_problems, training_layout  # noqa: F401
from tokenomy.core.train_time import ROOFLINE_TRAIN, TrainEfficiency, implied_flops_fraction, timeline
from tokenomy.specs import Hardware
from tokenomy.units import SECONDS_PER_HOUR

STEP_TERMS = ("compute", "bubble", "tp", "ep", "cp", "dp", "pp")


@dataclass(frozen=True)
class TrainStep:
    """One optimizer step per grid point. Times in s per step; NaN where the plan does not fit."""

    chips: object
    tokens_per_step: object
    microbatches: object
    flops: TrainFlops
    model_flops: object
    hardware_flops: object
    peak_flops_per_s: float
    compute_s: object
    bubble_fraction: object
    bubble_s: object
    tp_s: object
    ep_s: object
    ep_exposed_s: object
    cp_s: object
    cp_exposed_s: object
    dp_s: object
    dp_exposed_s: object
    pp_s: object
    pp_exposed_s: object
    comm_s: object  # this chip's collectives and sends
    comm_exposed_s: object  # on the critical path (PP fill/drain hops are the other stages' sends)
    modelled_step_s: object
    implied_flops_fraction: object  # with an MFU given: the matmul efficiency the modelled terms need to match it
    step_s: object
    tokens_per_s: object
    mfu: object
    memory: TrainMemory
    fits: object
    bound: object  # index into STEP_TERMS
    mfu_given: bool
    mfu_cap: object  # the MFU of the modelled step at flops_fraction 1: no stated MFU may exceed it
    efficiency: str = "roofline"  # the training terms' name (calibrated: catalog/efficiency/<chip>.toml)
    roofline_step_s: object = None  # the step at the roofline terms (η 1, φ 0), beside the estimate
    split: BackwardSplit = BackwardSplit()  # the stage's T_F, T_B, T_W the bubble was taken over (core/schedules.py)


def mfu_problem(mfu, cap, bubble, step_1, exposed_1, global_batch) -> str | None:
    """Why a stated MFU is refused: above the cap of the layout (MFU at flops_fraction 1); None when it is not."""
    m, c = np.broadcast_arrays(np.asarray(mfu, dtype=float), np.asarray(cap, dtype=float))
    over = np.ravel(m > c * (1 + 1e-9))
    if not np.any(over):
        return None
    i = int(np.argmax(over))
    g = lambda x: float(np.ravel(np.broadcast_to(np.asarray(x, dtype=float), m.shape))[i])  # noqa: E731
    return (f"mfu: {g(m):.2f} is above this layout's cap {g(c):.2f} (pipeline bubble {100 * g(bubble):.0f}%, "
            f"exposed comms {g(exposed_1):.3g} s of a {g(step_1):.3g} s step at full matmul speed; global batch "
            f"{g(global_batch):g}); raise the micro-batches or lower pp to lift it")


def _efficiency(efficiency: TrainEfficiency | None, flops_fraction) -> TrainEfficiency:
    """The terms the step is timed under: ``efficiency`` (default the roofline), its η replaced by
    ``flops_fraction`` when given."""
    e = efficiency or ROOFLINE_TRAIN
    return e if flops_fraction is None else replace(e, flops_fraction=flops_fraction, name="custom")


def train_step(m: ModelArch, hw: Hardware, plan: TrainPlan, *, mfu=None, efficiency: TrainEfficiency | None = None,
               flops_fraction=None, lowering: Lowering = Lowering()) -> TrainStep:
    """One optimizer step of ``plan`` on chips of ``hw`` under training terms ``efficiency`` (module docstring;
    ``lowering``: how lower_step lowers it — attention convention, compute dtype, the bytes stored)."""
    low = lower_step(m, hw, plan, lowering)
    eff = _efficiency(efficiency, flops_fraction)
    p, parts, mem, peak = plan, low.parts, low.memory, low.peak_flops_per_s
    chips = p.chips.astype(float)
    at_1 = timeline(parts, ROOFLINE_TRAIN)
    cap = low.model_flops / (at_1["step_s"] * chips * peak)
    if mfu is not None:
        exposed_1 = at_1["step_s"] - at_1["compute_s"] - at_1["bubble_s"]
        why = mfu_problem(np.where(mem.fits, mfu, 0.0), cap, parts.bubble, at_1["step_s"], exposed_1, p.global_batch)
        if why:
            raise ValueError(why)
    cm = timeline(parts, eff)
    compute_s, bubble_s, modelled = cm["compute_s"], cm["bubble_s"], cm["step_s"]
    step = modelled if mfu is None else low.model_flops / (chips * peak * np.asarray(mfu, dtype=float))
    implied = (implied_flops_fraction(parts, eff, step) if mfu is not None
               else np.full(np.shape(step), np.nan))
    exposed = cm["tp_exposed_s"] + cm["ep_exposed_s"] + cm["cp_exposed_s"] + cm["dp_exposed_s"] + parts.pp_exposed_s
    terms = np.broadcast_arrays(compute_s, bubble_s, cm["tp_exposed_s"], cm["ep_exposed_s"], cm["cp_exposed_s"],
                                cm["dp_exposed_s"], parts.pp_exposed_s)
    fits = mem.fits
    nan = lambda x: np.where(fits, x, np.nan)  # noqa: E731  (never a number for a plan that does not fit)
    tokens = np.asarray(p.global_batch, dtype=float) * p.seq_len
    return TrainStep(chips, tokens, p.microbatches, low.flops, low.model_flops, low.hardware_flops, peak,
                     nan(compute_s), parts.bubble, nan(bubble_s), nan(parts.tp_s), nan(parts.ep_s),
                     nan(cm["ep_exposed_s"]), nan(parts.cp_s), nan(cm["cp_exposed_s"]), nan(parts.dp_s),
                     nan(cm["dp_exposed_s"]), nan(low.pp_s), nan(parts.pp_exposed_s), nan(low.comm_s), nan(exposed),
                     nan(modelled), nan(implied), nan(step), nan(tokens / step),
                     nan(low.model_flops / (step * chips * peak)), mem, fits,
                     np.argmax(np.stack(terms), axis=0), mfu is not None, nan(cap), eff.name,
                     nan(at_1["step_s"]), low.split)


@dataclass(frozen=True)
class TrainRun:
    """A run of ``tokens`` training tokens at a step's speed: wall time, chip-hours, dollars."""

    tokens: object
    steps: object
    model_flops: object
    time_s: object
    chip_hours: object
    usd: object


def train_run(st: TrainStep, tokens, usd_per_chip_hour) -> TrainRun:
    """steps = D / tokens_per_step; time = steps · t_step; chip-hours = time · chips; $ = chip-hours · price."""
    D = np.asarray(tokens, dtype=float)
    steps = D / st.tokens_per_step
    time_s = steps * st.step_s
    chip_hours = time_s * st.chips / SECONDS_PER_HOUR
    return TrainRun(D, steps, D * st.flops.model, time_s, chip_hours, chip_hours * usd_per_chip_hour)


def chip_hours_at_mfu(model_flops, peak_flops_per_s, mfu):
    """Chip-hours = FLOPs / (peak · MFU) / 3600: how published runs are checked (econ/published.py)."""
    return np.asarray(model_flops, dtype=float) / (peak_flops_per_s * np.asarray(mfu, dtype=float)) / SECONDS_PER_HOUR
