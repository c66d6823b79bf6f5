"""A training step: FLOPs, compute, communication, pipeline bubble, memory per chip; time and $ on D tokens.

FLOPs per token (Kaplan et al. 2020 arXiv 2001.08361 §2.1; PaLM, Chowdhery et al. 2022 arXiv 2204.02311 App. B):
    model  = 6·N_active + 3·Σ_layers 2·H·(d_qk + d_v)·s_eff      (2 forward + 4 backward per weight; attention)
N_active = the weights one token multiplies by (dense + k routed experts + LM head; the input embedding is a
gather). Total parameters set the memory and the gradient traffic, never the FLOPs. s_eff = s ("full": PaLM's
12·L·H·Q·T convention, also Megatron's and torchtitan's), (s+1)/2 ("causal": what a causal kernel executes) or
0 ("none": 6N only). Hardware FLOPs add recomputation: selective +1 attention forward, full / reversible
+1 whole forward (Korthikanti et al. 2022 arXiv 2205.05198 §5).
Step time (pipeline, Narayanan et al. 2021 arXiv 2104.04473):
    t_step = (t_compute + t_TP + t_EP,exposed + t_CP,exposed) / (1 - bubble) + t_DP,exposed + t_PP,exposed
    t_compute = hardware FLOPs / (chips · peak · flops_fraction);   MFU = model FLOPs / (t_step · chips · peak)
With ``mfu`` given, t_step = model FLOPs / (chips · peak · mfu) and the modelled terms are shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.coeffs import ModelCoeffs, coefficients
from tokenomy.core.memory import TrainMemory, check_schedule, check_strategy, train_memory
from tokenomy.core.collectives import all_reduce, all_to_all, p2p, reduce_scatter
from tokenomy.core.pipeline import bubble_fraction
from tokenomy.specs import Topology
from tokenomy.specs import Hardware
from tokenomy.units import SECONDS_PER_HOUR

ATTENTION_CONVENTIONS = ("full", "causal", "none")
STEP_TERMS = ("compute", "bubble", "tp", "ep", "cp", "dp", "pp")


@dataclass(frozen=True)
class TrainFlops:
    """FLOPs per trained token, by term. ``model`` is the MFU numerator, ``hardware`` what the chips execute."""

    matmul: object  # 6·N_active
    attention: object  # 3·score·s_eff
    recompute: object
    model: object
    hardware: object
    n_active: object  # N_active (matmul weights per token)
    convention: str


def attention_positions(seq_len, window, convention="causal"):
    """Mean attended positions per query: full min(s, w); causal (s+1)/2, or w - w(w-1)/(2s) under a window w."""
    if convention not in ATTENTION_CONVENTIONS:
        raise ValueError(f"attention: {convention!r}; allowed: {', '.join(ATTENTION_CONVENTIONS)}")
    s, w = np.asarray(seq_len, dtype=float), np.asarray(window, dtype=float)
    if convention == "none":
        return 0.0 * s
    if convention == "full":
        return np.minimum(s, w)
    w = np.minimum(w, s)  # a window at least as long as the sequence is no window
    return w - w * (w - 1) / (2 * s)


def train_flops_per_token(c: ModelCoeffs, seq_len, attention="causal", strategy="none") -> TrainFlops:
    """6·N_active + 3·attention forward per token; recompute adds forward work (module docstring)."""
    check_strategy(strategy)
    n_active = np.asarray(c.matmul_flops_per_token, dtype=float) / 2
    att_fwd = (c.score_global_prefill * attention_positions(seq_len, np.inf, attention)
               + c.score_local_prefill * attention_positions(seq_len, c.window, attention))
    matmul, att = 6 * n_active, 3 * att_fwd
    extra = {"none": 0.0 * att_fwd, "selective": att_fwd}.get(strategy, 2 * n_active + att_fwd)
    return TrainFlops(matmul, att, extra, matmul + att, matmul + att + extra, n_active, attention)


@dataclass(frozen=True)
class TrainPlan:
    """Parallel layout and batch. chips = dp·tp·pp·cp; EP ranks are drawn from dp·cp. Numbers broadcast."""

    dp: object = 1
    tp: object = 1
    pp: object = 1
    cp: object = 1
    ep: object = 1
    zero: object = 1  # 0 none, 1 optimizer, 2 + gradients, 3 + weights (FSDP)
    sp: bool = True  # sequence parallelism with TP (Korthikanti et al. 2022)
    schedule: str = "1f1b"
    virtual_stages: object = 1  # interleaved only
    recompute: str = "selective"
    micro_batch: object = 1  # sequences per micro-batch
    seq_len: object = 4096
    global_batch: object = 1024  # sequences per optimizer step
    ep_overlap: object = 0.0  # share of the compute that hides EP all-to-alls (DualPipe-style overlap: 1)

    def __post_init__(self) -> None:
        check_schedule(self.schedule)
        check_strategy(self.recompute)
        for f in ("dp", "tp", "pp", "cp", "ep", "virtual_stages", "micro_batch", "seq_len", "global_batch"):
            v = np.asarray(getattr(self, f), dtype=float)
            if v.size == 0 or np.any(~np.isfinite(v)) or np.any(v < 1) or np.any(v != np.round(v)):
                raise ValueError(f"{f}: must be a positive integer, got {getattr(self, f)!r}")
        if np.any(~((np.asarray(self.ep_overlap, dtype=float) >= 0) & (np.asarray(self.ep_overlap) <= 1))):
            raise ValueError(f"ep_overlap: must be in [0, 1], got {self.ep_overlap!r}")

    @property
    def chips(self):
        return np.asarray(self.dp) * self.tp * self.pp * self.cp

    @property
    def microbatches(self):
        return np.asarray(self.global_batch, dtype=float) / (np.asarray(self.dp) * self.micro_batch)


def plan_problems(m: ModelArch, plan: TrainPlan) -> list[str]:
    """Why a (scalar) plan is not a valid layout of this model; empty when it is."""
    a, mlp = m.layers[0].attention, next((ly.mlp for ly in m.layers if ly.mlp.kind == "moe"), None)
    out = []
    mb = float(np.max(plan.microbatches))
    if mb != int(mb) or mb < 1:
        out.append(f"global_batch {plan.global_batch} is not a multiple of dp·micro_batch = "
                   f"{int(np.max(plan.dp * np.asarray(plan.micro_batch)))}")
    if a.num_heads % int(np.max(plan.tp)):
        out.append(f"tp {plan.tp} does not divide num_attention_heads {a.num_heads}")
    if int(np.max(plan.pp)) * int(np.max(plan.virtual_stages)) > m.num_layers:
        out.append(f"pp·virtual_stages > num_hidden_layers {m.num_layers}")
    ep = int(np.max(plan.ep))
    if ep > 1 and (mlp is None or mlp.num_experts % ep or (int(np.max(plan.dp * np.asarray(plan.cp))) % ep)):
        out.append(f"ep {ep} must divide the routed experts ({mlp.num_experts if mlp else 0}) and dp·cp")
    if plan.schedule == "interleaved" and int(mb) % int(np.max(plan.pp)):
        out.append("interleaved schedule needs micro-batches to be a multiple of pp")
    return out


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


def _comms(m: ModelArch, c: ModelCoeffs, topo: Topology, p: TrainPlan, mem: TrainMemory, e: float, grad_bytes,
           strategy: str) -> dict:
    """Per-chip communication seconds of one step, by parallel dimension (tokenomy.parallel.collectives).

    Rank order, innermost first: TP, CP, DP (EP ranks within DP·CP), PP; a group's stride is the product of
    the degrees inside it. Per micro-batch and layer: TP 4 all-reduces of the layer's activations (2 forward,
    2 backward; with SP the same bytes as all-gather + reduce-scatter), EP 4 all-to-alls (dispatch + combine,
    forward and backward), CP 3(cp-1) K/V block sends (ring attention); recompute repeats the forward ones.
    Per step: DP all-reduce of gradients (ZeRO <= 2) or, per micro-batch, all-gather x2 + reduce-scatter
    (ZeRO-3/FSDP); PP sends activations forward and gradients back, 2·m·v hops.
    """
    tp, pp, cp, dp, ep = (np.asarray(x, dtype=float) for x in (p.tp, p.pp, p.cp, p.dp, p.ep))
    mb, D, L = p.microbatches, m.hidden_size, m.num_layers
    tokens = np.asarray(p.micro_batch, dtype=float) * p.seq_len / cp  # per micro-batch on this chip's CP rank
    layers = np.ceil(L / pp)
    redo = 1.5 if strategy in ("full", "reversible") else 1.0  # recomputed forwards repeat their collectives
    tp_s = 4 * redo * layers * mb * all_reduce(topo, tp, tokens * D * e)
    routed = tokens / tp * float(c.experts_per_tok) * D * e  # SP splits tokens over TP ranks
    ep_s = 4 * redo * float(c.moe_layers) * layers / L * mb * all_to_all(topo, ep, routed, stride=tp)
    kv = tokens * (float(c.kv_global) + float(c.kv_local)) / L * e
    hop_cp = p2p(topo, kv, topo.chips_in_domain(cp, tp) < cp)
    cp_s = np.where(cp > 1, 3 * (cp - 1) * layers * mb * hop_cp, 0.0)
    hop = p2p(topo, tokens * D * e / (tp if p.sp else 1.0), topo.chips_in_domain(2, tp * cp * dp) < 2)
    pp_s = np.where(pp > 1, 2 * mb * np.asarray(p.virtual_stages, dtype=float) * hop, 0.0)
    pp_exposed = np.where(pp > 1, 2 * (pp - 1) * hop, 0.0)  # pipeline fill and drain wait on the hops
    zero = np.asarray(p.zero, dtype=float)
    g_dense = grad_bytes * mem.dense_params_per_chip
    g_expert = grad_bytes * (mem.params_per_chip - mem.dense_params_per_chip)
    edp = np.maximum(dp * cp / ep, 1)  # expert data-parallel group
    moe = g_expert > 0  # dense models have no expert group to reduce over
    ddp = all_reduce(topo, dp * cp, g_dense, stride=tp) + np.where(moe, all_reduce(topo, edp, g_expert, tp * ep), 0)
    fsdp = 3 * mb * (reduce_scatter(topo, dp * cp, g_dense, stride=tp)
                     + np.where(moe, reduce_scatter(topo, edp, g_expert, tp * ep), 0))
    dp_s = np.where(zero >= 3, fsdp, ddp)
    # DDP overlaps the last micro-batch's backward; FSDP prefetches its gathers under all the compute.
    dp_hide = np.where(zero >= 3, 1.0, (2 / 3) / mb)  # share of the compute time that hides DP traffic
    return dict(tp_s=tp_s, ep_s=ep_s, cp_s=cp_s, dp_s=dp_s, dp_hide=dp_hide, pp_s=pp_s, pp_exposed_s=pp_exposed,
                ep_overlap=np.clip(np.asarray(p.ep_overlap, dtype=float), 0.0, 1.0))


def _timeline(compute_s, cm: dict, att_share, bubble) -> dict:
    """Exposed terms and the step for a given compute time: CP hides under the attention forward, DP under
    ``dp_hide`` of the compute, EP under ``ep_overlap`` of it; TP sits on the critical path; the bubble
    stretches the pipelined chain."""
    cp_x = np.maximum(cm["cp_s"] - att_share * compute_s, 0.0)
    dp_x = np.maximum(cm["dp_s"] - cm["dp_hide"] * compute_s, 0.0)
    ep_x = np.maximum(cm["ep_s"] - cm["ep_overlap"] * compute_s, 0.0)
    chain = compute_s + cm["tp_s"] + ep_x + cp_x
    bubble_s = chain * bubble / (1 - bubble)
    return dict(compute_s=compute_s, cp_exposed_s=cp_x, dp_exposed_s=dp_x, ep_exposed_s=ep_x, bubble_s=bubble_s,
                step_s=chain + bubble_s + dp_x + cm["pp_exposed_s"])


def _calibrate(compute_at_1, cm, att_share, bubble, step_s):
    """The matmul efficiency eta at which the modelled step equals ``step_s`` (bisection in log eta; the
    modelled step falls monotonically in eta); inf where even infinitely fast matmuls are too slow."""
    lo, hi = np.full(np.shape(step_s), 1e-4), np.full(np.shape(step_s), 1e4)
    for _ in range(80):
        mid = np.sqrt(lo * hi)
        slow = _timeline(compute_at_1 / mid, cm, att_share, bubble)["step_s"] > step_s
        lo, hi = np.where(slow, mid, lo), np.where(slow, hi, mid)
    return np.where(_timeline(compute_at_1 / 1e4, cm, att_share, bubble)["step_s"] > step_s, np.inf, hi)


def train_step(m: ModelArch, hw: Hardware, plan: TrainPlan, *, mfu=None, flops_fraction=1.0, attention="causal",
               compute_dtype="bf16", weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0, act_bytes=2.0,
               dropout=False, flash=False, hbm_usable_fraction=1.0, coeffs: ModelCoeffs | None = None) -> TrainStep:
    """One optimizer step of ``plan`` on chips of ``hw`` (module docstring for the formulas)."""
    problems = plan_problems(m, plan)
    if problems:
        raise ValueError("plan: " + "; ".join(problems))
    c = coeffs or coefficients(m)
    _, peak = hw.chip.flops_for(compute_dtype)
    p = plan
    chips, mb = p.chips.astype(float), p.microbatches
    fl = train_flops_per_token(c, p.seq_len, attention, p.recompute)
    tokens = np.asarray(p.global_batch, dtype=float) * p.seq_len
    model_flops, hw_flops = tokens * fl.model, tokens * fl.hardware
    compute_1 = hw_flops / (chips * peak)  # at eta = 1
    att_share = (fl.attention / 3) / fl.hardware  # the attention forward hides ring-attention (CP) sends
    mem = train_memory(m, seq_len=p.seq_len, micro_batch=p.micro_batch, microbatches=mb, hbm_bytes=hw.hbm_bytes,
                       tp=p.tp, pp=p.pp, dp=p.dp, cp=p.cp, ep=p.ep, zero=p.zero, sp=p.sp, schedule=p.schedule,
                       virtual_stages=p.virtual_stages, strategy=p.recompute, weight_bytes=weight_bytes,
                       grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes, act_bytes=act_bytes,
                       dropout=dropout, flash=flash, hbm_usable_fraction=hbm_usable_fraction)
    cm = _comms(m, c, hw.topology, p, mem, act_bytes, grad_bytes, p.recompute)
    # Narayanan et al. 2021 §2.2: (p-1)/(v·m + p-1) of the step; v = 1 unless interleaved.
    bubble = bubble_fraction(p.pp, mb, p.virtual_stages if p.schedule == "interleaved" else 1)
    cm.update(_timeline(compute_1 / flops_fraction, cm, att_share, bubble))
    compute_s, bubble_s, modelled = cm["compute_s"], cm["bubble_s"], cm["step_s"]
    step_s = modelled if mfu is None else model_flops / (chips * peak * np.asarray(mfu, dtype=float))
    implied = (_calibrate(compute_1, cm, att_share, bubble, step_s) if mfu is not None
               else np.full(np.shape(step_s), np.nan))
    comm = cm["tp_s"] + cm["ep_s"] + cm["cp_s"] + cm["dp_s"] + cm["pp_s"]
    exposed = cm["tp_s"] + cm["ep_exposed_s"] + cm["cp_exposed_s"] + cm["dp_exposed_s"] + cm["pp_exposed_s"]
    terms = np.broadcast_arrays(compute_s, bubble_s, cm["tp_s"], cm["ep_exposed_s"], cm["cp_exposed_s"],
                                cm["dp_exposed_s"], cm["pp_exposed_s"])
    fits = mem.fits
    nan = lambda x: np.where(fits, x, np.nan)  # noqa: E731  (never a number for a plan that does not fit)
    return TrainStep(chips, tokens, mb, fl, model_flops, hw_flops, peak, nan(compute_s), bubble, nan(bubble_s),
                     nan(cm["tp_s"]), nan(cm["ep_s"]), nan(cm["ep_exposed_s"]), nan(cm["cp_s"]), nan(cm["cp_exposed_s"]), nan(cm["dp_s"]),
                     nan(cm["dp_exposed_s"]), nan(cm["pp_s"]), nan(cm["pp_exposed_s"]), nan(comm), nan(exposed),
                     nan(modelled), nan(implied), nan(step_s), nan(tokens / step_s),
                     nan(model_flops / (step_s * chips * peak)),
                     mem, fits, np.argmax(np.stack(terms), axis=0), mfu is not None)


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
