"""A training plan: the parallel layout, schedule, recompute and batch of a step (``TrainPlan``), why a plan is not a
valid layout of a model (``plan_problems``), and the pass engine's layout for its forward passes (``training_layout``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core import engine
from tokenomy.core.attention_kernel import check_attention_kernel
from tokenomy.core.deployment import Deployment
from tokenomy.core.fp8_casts import check_fp8_scaling
from tokenomy.core.layout import Layout
from tokenomy.core.memory import check_schedule, check_strategy
from tokenomy.core.moe_host import check_dispatcher
from tokenomy.core.recompute_modules import check_modules
from tokenomy.core.schedules import ZERO_BUBBLE, chunks_per_rank
from tokenomy.refusal import choice

MOE_KERNELS = ("unfused", "fused")  # core/train_time.py: fused grouped GEMM + CUDA graphs (ψ_fused, g = 1)


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
    virtual_stages: object = 1  # interleaved only (zb-v always runs two chunks a rank)
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
    # layers whose activations go to host memory between forward and backward (Megatron-Core
    # cpu_offloading_num_layers; core/memory.on_device_layers)
    offload_layers: object = 0
    # Megatron-Core's recompute_modules under recompute "selective" (core/recompute_modules.py; empty: core_attn)
    recompute_modules: tuple = ()
    # Megatron-Core's pipeline_model_parallel_layout ("Et*4|(t*4|)*14tmL"; core/pp_layout.py): "" = even stages
    pp_layout: str = ""

    def __post_init__(self) -> None:
        check_schedule(self.schedule)
        check_attention_kernel(self.attention_kernel)
        check_fp8_scaling(self.fp8_scaling)
        check_strategy(self.recompute)
        object.__setattr__(self, "recompute_modules", check_modules(self.recompute_modules, self.recompute))
        check_dispatcher(self.moe_dispatcher)
        choice("moe_kernels", self.moe_kernels, MOE_KERNELS, "a kind of MoE kernels")
        for f in ("dp", "tp", "pp", "cp", "ep", "virtual_stages", "micro_batch", "seq_len", "global_batch"):
            v = np.asarray(getattr(self, f), dtype=float)
            if v.size == 0 or np.any(~np.isfinite(v)) or np.any(v < 1) or np.any(v != np.round(v)):
                raise ValueError(f"{f}: must be a positive integer, got {getattr(self, f)!r}")
        for f in ("bf16_layers_at_end", "offload_layers"):
            v = np.asarray(getattr(self, f), dtype=float)
            if np.any(~np.isfinite(v)) or np.any(v < 0) or np.any(v != np.round(v)):
                raise ValueError(f"{f}: must be an integer >= 0, got {getattr(self, f)!r}")
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
    chunks = int(np.max(chunks_per_rank(plan.schedule, plan.virtual_stages)))
    if int(np.max(plan.pp)) * chunks > m.num_layers + 2:
        what = "pp·2 (zb-v's two chunks a rank)" if plan.schedule == "zb-v" else "pp·virtual_stages"
        out.append(f"pp: {what} > num_hidden_layers {m.num_layers} + 2 (embedding and loss chunks)")
    ep = int(np.max(plan.ep))
    if ep > 1 and (mlp is None or mlp.num_experts % ep or (int(np.max(plan.dp * np.asarray(plan.cp))) % ep)):
        out.append(f"ep: {ep} must divide the routed experts ({mlp.num_experts if mlp else 0}) and dp·cp")
    if plan.schedule == "interleaved" and int(mb) % int(np.max(plan.pp)):
        out.append("schedule: interleaved needs micro-batches to be a multiple of pp")
    pp_max = int(np.max(plan.pp))
    if plan.schedule == "dualpipe" and (pp_max % 2 or int(mb) % 2 or int(mb) < pp_max):
        out.append(f"schedule: dualpipe needs an even pp ({pp_max}) and an even number of micro-batches per "
                   f"pipeline of at least pp ({int(mb)}): half enter from each end")
    if plan.schedule in ZERO_BUBBLE and pp_max < 2:
        # the sail-sg implementation refuses it too: "zero bubble must be enabled with pipeline parallelism"
        out.append(f"schedule: {plan.schedule} needs pp > 1 (it reorders a pipeline's backward passes)")
    if not out and dep is not None:
        lay, B = training_layout(plan)
        code = np.ravel(dep.with_(layout=lay).work(B, 2.0, 2.0).structure)
        out += sorted({f"tp, ep: {engine.REASONS[int(k)]} (tp {plan.tp}, ep {plan.ep})" for k in code if k})
    return out


def training_layout(p: TrainPlan) -> tuple[Layout, object]:
    """The engine's layout and batch for one step's forward passes.

    EP ranks are drawn from dp·cp (attention data-parallel beside them, each rank its own micro-batch); a CP group
    splits each sequence evenly over its cp ranks (load-balanced ring attention), so the engine runs the cp ranks
    as replicas of cp x the sequences and every per-chip quantity is then divided by cp."""
    tp, pp, cp, dp, ep = (np.asarray(x, dtype=float) for x in (p.tp, p.pp, p.cp, p.dp, p.ep))
    lay = Layout(tp=tp, ep=ep, pp=pp, dp=dp * cp / ep, attn_dp=True, microbatches=p.microbatches)
    return lay, np.asarray(p.global_batch, dtype=float) * cp
