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
from tokenomy.core import engine
from tokenomy.core.attention_kernel import check_attention_kernel, kernel_attention_s
from tokenomy.core.fp8_casts import check_fp8_scaling, fp8_cast_s
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.layout import Layout
from tokenomy.core.memory import TrainBytes, TrainMemory, check_schedule, check_strategy, train_memory
from tokenomy.core.moe_host import check_dispatcher, layer_passes, sync_passes
from tokenomy.core.pipeline import schedule_bubble_fraction
from tokenomy.core.ssd_scan import scan_s
from tokenomy.core.train_comms import step_comms
from tokenomy.core.train_time import ROOFLINE_TRAIN, TrainEfficiency, TrainParts, implied_flops_fraction, timeline
from tokenomy.specs import Hardware
from tokenomy.units import SECONDS_PER_HOUR

ATTENTION_CONVENTIONS = ("full", "causal", "none")
MOE_KERNELS = ("unfused", "fused")  # core/train_time.py: fused grouped GEMM + CUDA graphs (ψ_fused, g = 1)
STEP_TERMS = ("compute", "bubble", "tp", "ep", "cp", "dp", "pp")


def check_attention(convention: str) -> str:
    if convention not in ATTENTION_CONVENTIONS:
        raise ValueError(f"attention: {convention!r}; allowed: {', '.join(ATTENTION_CONVENTIONS)}")
    return convention


@dataclass(frozen=True)
class TrainFlops:
    """FLOPs per trained token, by term. ``model`` is the MFU numerator, ``hardware`` what the chips execute."""

    matmul: object  # 6·N_active
    attention: object  # 3·attention forward under the convention
    recompute: object
    model: object
    hardware: object  # 3·(2·N_active + causal attention) + recompute
    n_active: object  # N_active (matmul weights per token)
    convention: str
    attention_executed: object = 0.0  # 3·causal attention forward: what the kernels run


def attention_positions(seq_len, window, convention="causal"):
    """Mean attended positions per query: full min(s, w); causal (s+1)/2, or w - w(w-1)/(2s) under a window w."""
    check_attention(convention)
    s, w = np.asarray(seq_len, dtype=float), np.asarray(window, dtype=float)
    if convention == "none":
        return 0.0 * s
    if convention == "full":
        return np.minimum(s, w)
    w = np.minimum(w, s)  # a window at least as long as the sequence is no window
    return w - w * (w - 1) / (2 * s)


def up_projection_flops(m: ModelArch) -> float:
    """FLOPs per token of MLA's up-projections (q from its latent, k_nope and v from the KV latent), all layers:
    what recompute "modules" repeats besides norms and SwiGLU (DeepSeek-V3 report §3.2.3); 0 without MLA."""
    out = 0.0
    for ly in m.layers:
        a = ly.attention
        if a.kind == "mla":
            q_up = (a.q_lora_rank or 0) * a.num_heads * a.head_dim
            out += 2.0 * (q_up + a.kv_lora_rank * a.num_heads * (a.head_dim - a.qk_rope_head_dim + a.v_head_dim))
    return out


def _flops(w: engine.Work, w_prev: engine.Work, seq_len, attention: str, strategy: str,
           up_flops: float = 0.0) -> TrainFlops:
    """Per-token training FLOPs from the engine's forward pass ``w`` (s tokens) and ``w_prev`` (s - 1 tokens);
    ``up_flops`` what recompute "modules" repeats (up_projection_flops)."""
    check_attention(attention)
    check_strategy(strategy)
    s = np.asarray(seq_len, dtype=float)
    tokens = np.asarray(w.batch, dtype=float) * s
    att = np.asarray(w.attention_flops, dtype=float) / tokens  # causal attention forward per token
    n_active = (np.asarray(w.flops, dtype=float) / tokens - att) / 2
    last = (np.asarray(w.attention_flops) - np.asarray(w_prev.attention_flops)) / np.asarray(w.batch, dtype=float)
    conv = {"causal": att, "full": last, "none": 0.0 * att}[attention]
    matmul = 6 * n_active
    extra = {"none": 0.0 * att, "selective": att, "modules": att + up_flops}.get(strategy, 2 * n_active + att)
    return TrainFlops(matmul, 3 * conv, extra, matmul + 3 * conv, matmul + 3 * att + extra, n_active, attention,
                      3 * att)


def train_flops_per_token(dep: Deployment, seq_len, attention="causal", strategy="none") -> TrainFlops:
    """FLOPs per token of training on sequences of ``seq_len`` (module docstring), from dep's model via the engine."""
    d = dep.with_(layout=Layout())
    s = np.asarray(seq_len, dtype=float)
    return _flops(d.work(1, s, s), d.work(1, s - 1, s - 1), s, attention, strategy, up_projection_flops(d.model))


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
    tp_overlap: object = 0.0  # share of the compute that hides TP collectives (Megatron/TE --tp-comm-overlap: 1)
    moe_kernels: str = "unfused"  # "fused": grouped GEMM with fused activation/quantisation, one CUDA graph
    moe_dispatcher: str = "hybridep"  # token dispatcher (core/moe_host.py): "alltoall"/"deepep" wait for the host
    # the recipe's last layers whose GEMMs stay in BF16 under an FP8/NVFP4 recipe (Megatron-Core
    # first_last_layers_bf16 / num_layers_at_end_in_bf16; Nemotron-3-Super's NVFP4 recipe: 14 of 88)
    bf16_layers_at_end: object = 0
    # the core-attention kernel (core/attention_kernel.py): "fused" (cuDNN / FA3 class, under η) or "fa2" (PyTorch
    # SDPA's FlashAttention-2 at its own published share of the 16-bit peak)
    attention_kernel: str = "fused"
    # FP8 operand casts (core/fp8_casts.py): "fused" (Transformer Engine) or "tensorwise" (torchao Float8Linear's
    # dynamic per-tensor scaling: amax and cast kernels of their own)
    fp8_scaling: str = "fused"

    def __post_init__(self) -> None:
        check_schedule(self.schedule)
        check_attention_kernel(self.attention_kernel)
        check_fp8_scaling(self.fp8_scaling)
        check_strategy(self.recompute)
        check_dispatcher(self.moe_dispatcher)
        if self.moe_kernels not in MOE_KERNELS:
            raise ValueError(f"moe_kernels: {self.moe_kernels!r}; allowed: {', '.join(MOE_KERNELS)}")
        for f in ("dp", "tp", "pp", "cp", "ep", "virtual_stages", "micro_batch", "seq_len", "global_batch"):
            v = np.asarray(getattr(self, f), dtype=float)
            if v.size == 0 or np.any(~np.isfinite(v)) or np.any(v < 1) or np.any(v != np.round(v)):
                raise ValueError(f"{f}: must be a positive integer, got {getattr(self, f)!r}")
        v = np.asarray(self.bf16_layers_at_end, dtype=float)
        if np.any(~np.isfinite(v)) or np.any(v < 0) or np.any(v != np.round(v)):
            raise ValueError(f"bf16_layers_at_end: must be an integer >= 0, got {self.bf16_layers_at_end!r}")
        for f in ("ep_overlap", "tp_overlap"):
            v = np.asarray(getattr(self, f), dtype=float)
            if np.any(~((v >= 0) & (v <= 1))):
                raise ValueError(f"{f}: must be in [0, 1], got {getattr(self, f)!r}")

    @property
    def chips(self):
        return np.asarray(self.dp) * self.tp * self.pp * self.cp

    @property
    def microbatches(self):
        return np.asarray(self.global_batch, dtype=float) / (np.asarray(self.dp) * self.micro_batch)


def plan_problems(m: ModelArch, plan: TrainPlan, dep: Deployment | None = None) -> list[str]:
    """Why a (scalar) plan is not a valid layout of this model; empty when it is (the engine's layout checks too)."""
    a, mlp = m.layers[0].attention, next((ly.mlp for ly in m.layers if ly.mlp.kind == "moe"), None)
    out = []
    mb = float(np.max(plan.microbatches))
    if mb != int(mb) or mb < 1:
        out.append(f"global_batch: {plan.global_batch} is not a multiple of dp·micro_batch = "
                   f"{int(np.max(plan.dp * np.asarray(plan.micro_batch)))}")
    if a.num_heads % int(np.max(plan.tp)):
        out.append(f"tp: {plan.tp} does not divide num_attention_heads {a.num_heads}")
    # The embedding and the loss may each take a pipeline chunk's place (Megatron-Core's
    # --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: 126 layers + 2 = 16 x 8).
    if int(np.max(plan.pp)) * int(np.max(plan.virtual_stages)) > m.num_layers + 2:
        out.append(f"pp: pp·virtual_stages > num_hidden_layers {m.num_layers} + 2 (embedding and loss chunks)")
    ep = int(np.max(plan.ep))
    if ep > 1 and (mlp is None or mlp.num_experts % ep or (int(np.max(plan.dp * np.asarray(plan.cp))) % ep)):
        out.append(f"ep: {ep} must divide the routed experts ({mlp.num_experts if mlp else 0}) and dp·cp")
    if plan.schedule == "interleaved" and int(mb) % int(np.max(plan.pp)):
        out.append("schedule: interleaved needs micro-batches to be a multiple of pp")
    pp_max = int(np.max(plan.pp))
    if plan.schedule == "dualpipe" and (pp_max % 2 or int(mb) % 2 or int(mb) < pp_max):
        out.append(f"schedule: dualpipe needs an even pp ({pp_max}) and an even number of micro-batches per "
                   f"pipeline of at least pp ({int(mb)}): half enter from each end")
    if not out and dep is not None:
        lay, B = training_layout(plan)
        code = np.ravel(dep.with_(layout=lay).work(B, 2.0, 2.0).structure)
        out += sorted({f"tp, ep: {engine.REASONS[int(k)]} (tp {plan.tp}, ep {plan.ep})" for k in code if k})
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
    mfu_cap: object  # the MFU of the modelled step at flops_fraction 1: no stated MFU may exceed it
    efficiency: str = "roofline"  # the training terms' name (calibrated: catalog/efficiency/<chip>.toml)
    roofline_step_s: object = None  # the step at the roofline terms (η 1, φ 0), beside the estimate


def training_layout(p: TrainPlan) -> tuple[Layout, object]:
    """The engine's layout and batch for one step's forward passes.

    EP ranks are drawn from dp·cp (attention data-parallel beside them, each rank its own micro-batch); a CP group
    splits each sequence evenly over its cp ranks (load-balanced ring attention), so the engine runs the cp ranks
    as replicas of cp x the sequences and every per-chip quantity is then divided by cp."""
    tp, pp, cp, dp, ep = (np.asarray(x, dtype=float) for x in (p.tp, p.pp, p.cp, p.dp, p.ep))
    lay = Layout(tp=tp, ep=ep, pp=pp, dp=dp * cp / ep, attn_dp=True, microbatches=p.microbatches)
    return lay, np.asarray(p.global_batch, dtype=float) * cp


def _forward(dep: Deployment, plan: TrainPlan) -> tuple[engine.Work, engine.Work]:
    """The forward passes of one step on the training layout: s tokens per sequence, and s - 1 (the "full"
    attention convention's last query is their difference)."""
    lay, B = training_layout(plan)
    d = dep.with_(layout=lay)
    s = np.asarray(plan.seq_len, dtype=float)
    return d.work(B, s, s), d.work(B, s - 1, s - 1)


def _attention_only(w: engine.Work) -> engine.Work:
    """The attention part of a forward (what selective recompute repeats), as a Work the engine can time."""
    return replace(w, dense_flops=0.0 * w.dense_flops, expert_flops=0.0 * w.expert_flops)


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


@dataclass(frozen=True)
class LoweredStep:
    """A plan lowered once, efficiency-free: FLOPs, memory per chip, the parts the step is timed from."""

    flops: TrainFlops
    model_flops: object
    hardware_flops: object
    peak_flops_per_s: float
    memory: TrainMemory
    parts: TrainParts
    comm_s: object  # this chip's collectives and sends, all dimensions
    pp_s: object


def _expert_width(m: ModelArch) -> float:
    mlp = next((ly.mlp for ly in m.layers if ly.mlp.kind == "moe"), None)
    return float(mlp.expert_intermediate_size) if mlp is not None else 0.0


@dataclass(frozen=True)
class Lowering:
    """How a step is lowered beside its plan: the attention convention counted (ATTENTION_CONVENTIONS), the GEMMs'
    dtype and what the step stores (core.memory.TrainBytes: weight, gradient, optimizer and activation bytes,
    dropout, FlashAttention, usable HBM)."""

    attention: str = "causal"
    compute_dtype: str = "bf16"
    nbytes: TrainBytes = TrainBytes()


def ep_overlap_of(plan: TrainPlan):
    """The share of the compute that hides the EP all-to-alls: the plan's ``ep_overlap`` (in [0, 1]); DualPipe runs
    each forward chunk beside a backward chunk and hides each one's dispatch and combine under the other's computation
    (DeepSeek-V3 report §3.2.1): ε = 1 whatever ep_overlap says."""
    return 1.0 if plan.schedule == "dualpipe" else np.clip(np.asarray(plan.ep_overlap, dtype=float), 0.0, 1.0)


def lower_step(m: ModelArch, hw: Hardware, plan: TrainPlan, how: Lowering = Lowering()) -> LoweredStep:
    """The plan's FLOPs (through the pass engine), memory and step parts (core/train_time.py); refused with the
    layout's problems in one line."""
    attention, compute_dtype, act_bytes = how.attention, how.compute_dtype, how.nbytes.act_bytes
    grad_bytes = how.nbytes.grad_bytes
    # Training routes on its own balancing (DeepSeek-V3 report §2.1.2: each expert's bias is moved every step
    # against its load; Megatron's auxiliary losses), not on the serving traffic whose skew arch/routing.py holds:
    # balls in bins
    dep = Deployment(replace(m, expert_balance=None), hw)
    problems = plan_problems(m, plan, dep)
    if problems:
        raise ValueError("; ".join(problems))  # each names its field first ('global_batch: ...')
    p = plan
    gemm_dtype, peak = hw.chip.flops_for(compute_dtype)
    mb, cp = p.microbatches, np.asarray(p.cp, dtype=float)
    w, w_prev = _forward(dep, p)
    up = up_projection_flops(m)
    fl = _flops(w, w_prev, p.seq_len, attention, p.recompute, up)
    tokens = np.asarray(p.global_batch, dtype=float) * p.seq_len
    # The engine times the busiest chip's forward of one micro-batch at peak; training HBM fit is train_memory's.
    peaks = engine.Peaks(peak, hw.chip.hbm_bytes_per_s, np.inf)

    def roof(work):
        return engine.times(work, dep.topo, peaks, ROOFLINE).compute_s * mb / cp

    fwd, att = roof(w), roof(_attention_only(w))
    # Core attention (FlashAttention / cuDNN; a state-space mixer's scan) runs in 16 bits whatever dtype the GEMMs
    # use: Megatron-Core's fp8_dot_product_attention and Megatron-Bridge's mixed-precision recipes default to False
    # (transformer_config.py, mixed_precision.py), so its FLOPs go at the 16-bit peak.
    att16 = att * peak / hw.chip.flops_for("bf16")[1]
    fwd, att = fwd + att16 - att, att16
    # EP dispatch + combine: the engine's all-to-alls of the forward pass (core/collectives.py: per topology level,
    # DeepEP's node-limited, once-per-node copies for passes of many tokens), repeated by the backward (the
    # gradients travel the same routes in reverse) and by a fully recomputed forward.
    ep_fwd = engine.times(w, dep.topo, peaks, ROOFLINE).ep_comm_s * mb / cp
    redo = np.where(p.recompute in ("full", "reversible"), 1.0, 0.0)
    ep_s = ep_fwd * (2 + redo)
    # The non-GEMM work moves activations (core/train_time.py): the forward's activation traffic,
    # repeated by the backward (x2) and a fully recomputed forward, at HBM bandwidth.
    act_s = np.asarray(w.act_bytes, dtype=float) * mb / cp * (3 + redo) / hw.chip.hbm_bytes_per_s
    expert = roof(replace(w, dense_flops=0.0 * w.dense_flops, attn_flops=0.0 * w.attn_flops))
    # modules: the attention, and the up-projections' share of the forward's FLOPs
    up_share = up / (np.asarray(w.flops, dtype=float) / (np.asarray(w.batch, dtype=float) * p.seq_len))
    redo_share = {"none": 0.0 * fwd, "selective": att / fwd, "modules": att / fwd + up_share}.get(
        p.recompute, 1.0 + 0.0 * fwd)
    total = 3 * fwd + redo_share * fwd  # forward, backward 2x (data + weight gradients), recompute
    expert_total = expert * (3 + np.where(p.recompute in ("full", "reversible"), 1.0, 0.0))
    mem = train_memory(m, p, hw.chip.exposed_hbm_bytes, how.nbytes)  # the usable HBM of every door (specs.Chip)
    cm = step_comms(m, dep.shape.coeffs, hw.topology, p, mem, act_bytes, grad_bytes, p.recompute)
    # Narayanan et al. 2021 §2.2: (p-1)/(v·m + p-1) of the step, v = 1 unless interleaved; DualPipe's
    # (p/2-1)(F&B + B - 3W) (core/pipeline.py).
    bubble = schedule_bubble_fraction(p.schedule, p.pp, mb, p.virtual_stages)
    ep_overlap = ep_overlap_of(p)
    width = _expert_width(m)
    fused = p.moe_kernels == "fused" and width > 0
    att_all = att * (3 + (p.recompute != "none"))  # attention forward, backward 2x, recomputed once
    tail = bf16_tail(m, p, total - expert_total - att_all, expert_total,
                     gemm_dtype, peak / hw.chip.flops_for("bf16")[1])
    att_moved, att_kernel_s = kernel_attention_s(p.attention_kernel, att_all)
    n_moe = sum(ly.mlp.kind == "moe" for ly in m.layers)
    parts = TrainParts(dense_1_s=total - expert_total - tail["dense16_1_s"] - att_moved,
                       expert_1_s=expert_total - tail["expert16_1_s"], **tail,
                       expert_width=width, moe=float(width > 0), att_share=att / total, act_1_s=act_s,
                       fused=float(fused), bubble=bubble,
                       tp_s=cm["tp_s"], ep_s=ep_s, cp_s=cm["cp_s"], dp_s=cm["dp_s"], dp_hide=cm["dp_hide"],
                       ep_overlap=ep_overlap, tp_overlap=np.clip(np.asarray(p.tp_overlap, dtype=float), 0, 1),
                       pp_exposed_s=cm["pp_exposed_s"],
                       sync_passes=sync_passes(p.moe_dispatcher, fused, n_moe, p.pp, mb, redo),
                       layer_passes=layer_passes(fused, n_moe, p.pp, mb), fp4=float(gemm_dtype == "fp4"),
                       # ω16 compares 16-bit with the 8-bit GEMMs η is measured on: only a chip that has both
                       wide=float(gemm_dtype in ("bf16", "fp16") and "fp8" in hw.chip.peak_flops_per_s),
                       scan_s=scan_s(m, p), attention_kernel_s=att_kernel_s,
                       cast_s=fp8_cast_s(m, p, gemm_dtype, hw.chip.hbm_bytes_per_s))
    comm = cm["tp_s"] + ep_s + cm["cp_s"] + cm["dp_s"] + cm["pp_s"]
    return LoweredStep(fl, tokens * fl.model, tokens * fl.hardware, peak, mem, parts, comm, cm["pp_s"])


def bf16_tail(m: ModelArch, plan: TrainPlan, dense_gemm_1_s, expert_1_s, gemm_dtype: str, peak_ratio) -> dict:
    """The GEMMs of the recipe's last ``bf16_layers_at_end`` layers at the 16-bit peak (Megatron-Core
    first_last_layers_bf16: those layers' linear layers run outside the FP8/FP4 autocast). Megatron-Bridge's
    ``nemotron_3_super_bf16_with_nvfp4_mixed`` (src/megatron/bridge/training/mixed_precision.py) keeps the last 14 of
    Nemotron-3-Super's 88 layers in BF16, "the final 15%" of NVIDIA's NVFP4 pre-training recipe (arXiv 2509.25149).
    They sit on the last pipeline stage, which sets the step: a share τ = min(n/ceil(L/pp), 1) of its GEMMs'
    roofline time moves from the GEMM peak to the 16-bit one, ``peak_ratio`` = peak/peak16 times longer at η·ω16
    (core/train_time.compute_s); layers weighed equally (Nemotron's tail is the model's mix of Mamba, MoE and
    attention layers). Megatron's hybrid (Mamba) stack counts each mixer and each MLP/MoE block as a layer
    (hybrid_override_pattern, 88 for Nemotron-3-Super) where a Layer here pairs a mixer with the block after it
    (Layer.norms counts its blocks). No tail under BF16 GEMMs."""
    hybrid = any(ly.attention.variant == "mamba2" for ly in m.layers)
    L = sum(ly.norms for ly in m.layers) if hybrid else len(m.layers)
    n = np.asarray(plan.bf16_layers_at_end, dtype=float)
    tau = np.where(gemm_dtype in ("bf16", "fp16"), 0.0,
                   np.minimum(n / np.ceil(L / np.asarray(plan.pp, dtype=float)), 1.0))
    return dict(dense16_1_s=tau * dense_gemm_1_s, expert16_1_s=tau * expert_1_s, tail16_ratio=peak_ratio + 0.0 * tau)


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
                     nan(at_1["step_s"]))


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
