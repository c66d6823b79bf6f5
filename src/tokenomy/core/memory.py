"""Training memory per chip: weights, gradients, optimizer state and activations, and which term overflows.

Model states (Rajbhandari et al. 2020, ZeRO, arXiv 1910.02054 §3.1): per parameter w + g + o bytes, with
o = master copy + Adam's two moments (4 + 4 + 4 = 12 in fp32: "16 bytes per parameter" with bf16 w and g).
ZeRO-1 shards o, ZeRO-2 also g, ZeRO-3 (= FSDP) also w, over the data-parallel group (dp·cp; experts:
dp·cp/ep). TP shards every layer weight, PP holds ceil(L/p) layers, EP holds E/ep experts.

Activations per layer, generalising Korthikanti et al. 2022 (arXiv 2205.05198, §4): per token of a layer,
    norms·e·D/r + e·D/r (attention input) + e·(q + k + v widths)/t + (2e + m | e)·H·s/t (scores)
    + e·H·dv/t (projection input) + m·D/r + e·D/r (MLP input) + e·(3F gated | 2F)/t + m·D/r (+ MoE: k routed
    copies of the token and their expert intermediates)
e = activation bytes, m = dropout-mask bytes (1 with dropout, else 0), t = tensor parallel, r = t with
sequence parallelism else 1. For a GPT layer (MHA, F = 4D, ungated, dropout, e = 2) this is Korthikanti's
sbh(34 + 5as/h) at t = 1, sbh(10 + 24/t + 5as/(ht)) with TP, and sbh/t·(34 + 5as/h) with TP + SP.
Strategies (stored from forward to backward): none = all of it; selective = without the s² score terms
(Korthikanti §5; FlashAttention has the same effect); modules = selective, and without the norms' outputs,
MLA's up-projected q, k, v (the latents kept) and the SwiGLU outputs (its inputs kept): DeepSeek-V3 report
§3.2.3 and §3.3.3, Megatron-Core's --recompute-modules layernorm mla_up_proj moe_act; op = torchtitan's op-level
policy (core/op_sac.py: the block input, every second matmul's output and the attention output); full = the layer
input only; reversible = nothing
per layer (Gomez et al. 2017, arXiv 1707.04585) plus the two output streams once. full and reversible add a
working set of one layer being recomputed. A GEMM's input kept for its weight gradient is stored at g bytes (the
attention and MLP inputs, MLA's latents, the attention output, the SwiGLU output, each routed copy's token): e, or
the quantized copy an FP8/NVFP4 recipe keeps (with_gemm_inputs). The last stage adds one micro-batch's logits at
the loss's bytes per logit (TrainBytes.logit_bytes). The first stage holds a schedule's in-flight micro-batches
(core/schedules.py: p for 1F1B, ZB-H1 and ZB-V, 2p-1 for ZB-H2, p+1 for DualPipe, which also doubles the model
states); under ZB-V the first rank also holds the head and the logits. Pure functions over numpy arrays.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from tokenomy.arch.model import Layer, ModelArch
from tokenomy.arch.params import count_params
from tokenomy.core.op_sac import op_bytes_per_token
from tokenomy.core.recompute_modules import effective
# a schedule's in-flight micro-batches live with its bubble (core/schedules.py); re-exported for the doors
from tokenomy.core.schedules import SCHEDULES, check_schedule, in_flight_microbatches  # noqa: F401
from tokenomy.refusal import choice
from tokenomy.units import fmt_bytes

if TYPE_CHECKING:
    from tokenomy.core.train_plan import TrainPlan

STRATEGIES = ("none", "selective", "modules", "op", "full", "reversible")
MEMORY_TERMS = ("weights", "gradients", "optimizer", "activations")


def check_strategy(strategy: str) -> str:
    return choice("recompute", strategy, STRATEGIES, "a strategy")


def _a(x):
    return np.asarray(x, dtype=float)


@dataclass(frozen=True)
class TrainBytes:
    """What a training step stores, in bytes: per weight, gradient and optimizer state (fp32 master + 2 fp32 Adam
    moments = 12: the ZeRO paper's K) and per activation element; dropout masks kept or not, FlashAttention (no s²
    scores stored) or not; the share of HBM usable."""

    weight_bytes: float = 2.0
    grad_bytes: float = 2.0
    optimizer_bytes: float = 12.0
    act_bytes: float = 2.0
    dropout: bool = False
    flash: bool = False
    hbm_usable_fraction: float = 1.0
    gemm_input_bytes: float | None = None  # per element of a GEMM's input kept for its weight gradient (None: act)
    # per logit of one micro-batch at the loss's peak: fp32 logits (4); an unfused fp32 cross-entropy on bf16 logits
    # holds the bf16 logits, their fp32 copy and the fp32 log-softmax (2 + 4 + 4 = 10: torchtitan train.py)
    logit_bytes: float = 4.0


# Bytes per element of a quantized GEMM input: the 8-bit value, or the 4-bit one and an 8-bit scale per 16 (NVFP4).
QUANTIZED_INPUT_BYTES = {"fp8": 1.0, "fp4": 0.5 + 1.0 / 16}


def with_gemm_inputs(nbytes: TrainBytes, gemm_dtype: str, fp8_scaling: str) -> TrainBytes:
    """``nbytes`` with the GEMM inputs stored as the recipe keeps them: Transformer Engine's Linear, LayerNormLinear and
    GroupedLinear quantize their input once and save that quantized copy, column-wise only, for the weight-gradient
    GEMM (transformer_engine/pytorch/module/linear.py, ``saved_inputmat = inputmat`` after ``update_usage(rowwise_usage=
    False, columnwise_usage=True)``), as DeepSeek-V3 caches the inputs of its Linear operators in FP8 (report
    §3.3.2): 1 B per element under FP8 (MXFP8's E8M0 scale per 32 elements, 3%, is not counted: the cases say fp8 for
    both), 0.5 + 1/16 B under NVFP4. torchao's tensorwise Float8Linear saves the high-precision input and casts again
    in the backward (fp8_scaling "tensorwise"), and 16-bit GEMMs have nothing narrower: the activation dtype. A
    stated ``gemm_input_bytes`` is kept; never wider than the activations."""
    if nbytes.gemm_input_bytes is not None:
        return nbytes
    q = QUANTIZED_INPUT_BYTES.get(gemm_dtype) if fp8_scaling == "fused" else None
    return replace(nbytes, gemm_input_bytes=nbytes.act_bytes if q is None else min(q, nbytes.act_bytes))


@dataclass(frozen=True)
class Stored:
    """How one layer's activations are stored (module docstring): split over ``tp`` ranks (and the replicated part
    too with sequence parallelism ``sp``), ``act_bytes`` per element, dropout masks, FlashAttention, a parallel
    attention + MLP block (one shared input), and what is recomputed (``strategy``). Numbers broadcast."""

    tp: object = 1
    sp: bool = False
    act_bytes: float = 2.0
    dropout: bool = False
    flash: bool = False
    parallel_block: bool = False
    strategy: str = "none"
    gemm_bytes: float | None = None  # per element of a GEMM input kept for the backward (None: act_bytes)
    # Megatron-Core's recompute_modules under "selective" (core/recompute_modules.effective; empty: core_attn alone)
    modules: frozenset = frozenset()


def _mlp_inner(F, gated: bool, e, g):
    """Bytes stored inside an MLP per token: gate and up (gated) or the activation's input (ungated) at e, and the
    activation's output, the down projection's GEMM input, at g."""
    return (2 if gated else 1) * F * e + F * g


def _mlp_act_inputs(F, gated: bool, e, g):
    """An MLP under output-discarding recompute of its activation: the activation's inputs alone, gate and up
    (2F at e) or the up projection's output (F at e, ungated); nothing at g (the signature is _mlp_inner's)."""
    return (2 if gated else 1) * F * e


def layer_bytes_per_token(layer: Layer, D: int, seq_len, how: Stored = Stored()):
    """Activation bytes one layer stores per local token (see the module docstring for the terms); a sliding
    window caps the scores' length."""
    strategy, flash, parallel_block = check_strategy(how.strategy), how.flash, how.parallel_block
    t = _a(how.tp)
    r = t if how.sp else 1.0
    e, dropout = how.act_bytes, how.dropout
    g = e if how.gemm_bytes is None else how.gemm_bytes  # a GEMM's input, kept for its weight gradient
    m = 1.0 if dropout else 0.0
    a, mlp = layer.attention, layer.mlp
    if strategy == "full":
        return e * D / r + 0 * t
    if strategy == "reversible":
        return 0 * t
    if strategy == "op":
        return op_bytes_per_token(layer, D, t, how.sp, e)
    s_kv = _a(seq_len) if a.window is None else np.minimum(_a(seq_len), a.window)
    if a.kind == "mla":
        qkv = a.num_heads * (2 * a.head_dim + a.v_head_dim)
        latent = (a.q_lora_rank or 0) + a.kv_lora_rank + a.qk_rope_head_dim
    else:
        qkv = a.num_heads * a.head_dim + a.num_kv_heads * (a.head_dim + a.v_head_dim)
        latent = 0
    modules = strategy == "modules"
    # Megatron's module list (core/recompute_modules.py); the strategy "modules" is layernorm + mla_up_proj + the
    # activations of every MLP (dense and routed), the DeepSeek-V3 report's policy
    mods = set(effective(strategy, how.modules)) | (
        {"core_attn", "layernorm", "mla_up_proj", "moe_act"} if modules else set())
    score = 0.0 if ("core_attn" in mods or flash) else (((2 * e + m) if dropout else e) * a.num_heads * s_kv)
    norms = 0 if "layernorm" in mods else layer.norms * e * D
    # attention input, dropout masks, MLA latents (up-projection inputs), MLP input: GEMM inputs at g
    replicated = norms + g * D + m * D + g * latent + m * D + (0 if parallel_block else g * D)
    sharded = (0 if "mla_up_proj" in mods and a.kind == "mla" else e * qkv) + score + g * a.num_heads * a.v_head_dim
    # output-discarding activation recompute: the SwiGLU inputs kept, its output recomputed
    act_only = _mlp_act_inputs
    if mlp.kind == "dense":
        inner = act_only if modules else _mlp_inner
        return replicated / r + (sharded + (0 if "mlp" in mods else inner(mlp.intermediate_size, mlp.gated, e, g))) / t
    if "moe" in mods:  # the whole MoE layer checkpointed: its input (the MLP input above) alone kept
        return replicated / r + sharded / t
    shared = 0 if "shared_experts" in mods else (act_only if modules else _mlp_inner)(
        mlp.num_shared_experts * mlp.shared_intermediate_size, mlp.gated, e, g)
    routed = act_only if "moe_act" in mods else _mlp_inner
    replicated = replicated + e * mlp.num_experts  # router logits
    sharded = sharded + shared + mlp.experts_per_tok * (g * D + routed(mlp.expert_intermediate_size, mlp.gated, e, g))
    return replicated / r + sharded / t


def layer_activation_bytes(layer: Layer, D: int, seq_len, micro_batch, **how):
    """Bytes of one layer for one micro-batch of b sequences of s tokens: s·b·(bytes per token); ``how``: Stored's
    fields."""
    return _a(seq_len) * _a(micro_batch) * layer_bytes_per_token(layer, D, seq_len, Stored(**how))


@dataclass(frozen=True)
class TrainMemory:
    """Bytes per chip (of the fullest pipeline stage), by term. ``largest`` indexes MEMORY_TERMS."""

    params_per_chip: object
    dense_params_per_chip: object  # the rest are routed experts (their gradients reduce over dp·cp/ep chips)
    weights_bytes: object
    gradients_bytes: object
    optimizer_bytes: object
    activations_bytes: object
    act_stored_bytes: object  # kept from forward to backward, all in-flight micro-batches
    act_working_bytes: object  # one layer being recomputed (full / reversible)
    logits_bytes: object  # fp32 logits of one micro-batch on the last stage
    total_bytes: object
    hbm_bytes: object  # usable HBM per chip
    fits: object
    largest: object
    strategy: str


def params_per_chip(m: ModelArch, *, tp=1, pp=1, ep=1, both_ends=False):
    """(dense, expert) parameters held by one chip of the fullest stage: ceil(L/p) layers of weights split
    by TP (experts also by EP), plus the embedding or head (both when not pipelined, or ``both_ends``: a V-shaped
    schedule puts the first and the last chunk on the first rank, ZB-V), split by TP."""
    p = count_params(m)
    L = m.num_layers
    tp, pp, ep = _a(tp), _a(pp), _a(ep)
    frac = np.ceil(L / pp) / L
    layers_dense = p.dense - m.hidden_size  # final norm sits with the head
    emb = np.where((pp > 1) & (not both_ends), max(p.embed, p.head), p.embed + p.head)
    dense = (layers_dense * frac + emb + m.hidden_size + p.extra) / tp
    expert = p.expert_total * frac / (ep * tp)
    return dense, expert


def on_device_layers(stage_layers, offload_layers):
    """Layers' worth of one micro-batch's activations a stage keeps in HBM when ``offload_layers`` of its layers send
    theirs to host memory (Megatron-Core cpu_offloading_num_layers, Transformer Engine's get_cpu_offload_context):
    L_stage - n + min(n, 1), the one layer whose copy is in flight (AsyncDoubleBufferGroupOffloadHandler: "D2h and h2d
    copying are completely hidden behind computation if computation time of a layer is longer than host-device
    communication time", so the step's time is unchanged: Llama 3.1 70B's 3.7 GB per layer and micro-batch of 2 x 8K
    cross GB200's 450 GB/s NVLink-C2C in 8 ms against ~13 ms of the layer's FP8 forward)."""
    n = np.minimum(_a(offload_layers), stage_layers)
    return stage_layers - n + np.minimum(n, 1.0)


def train_memory(m: ModelArch, plan: "TrainPlan", hbm_bytes, nbytes: TrainBytes = TrainBytes()) -> TrainMemory:
    """Peak memory per chip of a training step of ``plan`` (core.training.TrainPlan: its degrees, ZeRO stage,
    sequence parallelism, schedule, recompute, micro-batch, sequence length and micro-batches) on ``hbm_bytes`` per
    chip, storing ``nbytes`` (module docstring); every numeric field broadcasts."""
    strategy, schedule, sp = check_strategy(plan.recompute), plan.schedule, plan.sp
    seq_len, micro_batch, act_bytes = plan.seq_len, plan.micro_batch, nbytes.act_bytes
    tp, pp, dp, cp, ep, zero = (_a(getattr(plan, k)) for k in ("tp", "pp", "dp", "cp", "ep", "zero"))
    if np.any((zero < 0) | (zero > 3)):
        raise ValueError(f"zero: {zero} is not a ZeRO stage; allowed: 0, 1, 2, 3 (3 = FSDP)")
    v_shape = schedule == "zb-v"  # the first rank holds the first and the last chunk: embedding, head and logits
    dense, expert = params_per_chip(m, tp=tp, pp=pp, ep=ep, both_ends=v_shape)
    shard_d, shard_e = dp * cp, np.maximum(dp * cp / ep, 1.0)

    def state(bytes_per_param, sharded):
        return bytes_per_param * (dense / np.where(sharded, shard_d, 1.0) + expert / np.where(sharded, shard_e, 1.0))

    # DualPipe holds two stages per rank (stage i and p-1-i: "Parameter 2x", DeepSeek-V3 report Table 2), so
    # every model state is twice a 1F1B stage's.
    copies = 2.0 if schedule == "dualpipe" else 1.0
    weights, grads = copies * state(nbytes.weight_bytes, zero >= 3), copies * state(nbytes.grad_bytes, zero >= 2)
    opt = copies * state(nbytes.optimizer_bytes, zero >= 1)

    D, L = m.hidden_size, m.num_layers
    tokens = _a(micro_batch) * _a(seq_len) / cp
    how = Stored(tp, sp, act_bytes, nbytes.dropout, nbytes.flash, m.parallel_block, strategy, nbytes.gemm_input_bytes,
                 frozenset(plan.recompute_modules))
    counts = Counter(m.layers)
    per_tok = sum(n * layer_bytes_per_token(ly, D, seq_len, how) for ly, n in counts.items()) / L
    widest = max(np.max(layer_bytes_per_token(ly, D, seq_len, replace(how, strategy="none"))) for ly in counts)
    per_stage = per_tok * tokens * on_device_layers(np.ceil(L / pp), plan.offload_layers)  # one micro-batch
    in_flight = np.where(pp > 1, in_flight_microbatches(pp, plan.microbatches, schedule, plan.virtual_stages), 1.0)
    r = tp if sp else 1.0
    stored = per_stage * in_flight
    if strategy == "reversible":
        stored = stored + 2 * act_bytes * D / r * tokens * in_flight  # the two output streams per micro-batch
    working = (widest * tokens) if strategy in ("full", "reversible") else 0.0 * tokens
    logits = nbytes.logit_bytes * tokens * m.vocab_size / tp
    first = stored + working + (logits if v_shape else 0.0)
    last = per_stage + working + logits  # the last stage holds one micro-batch in flight, plus the logits
    acts = np.where(pp > 1, np.maximum(first, last), stored + working + logits)
    total = weights + grads + opt + acts
    usable = hbm_bytes * nbytes.hbm_usable_fraction
    largest = np.argmax(np.stack(np.broadcast_arrays(weights, grads, opt, acts)), axis=0)
    return TrainMemory(dense + expert, dense, weights, grads, opt, acts, stored, working, logits, total, usable,
                       total <= usable, largest, strategy)


def overflow_message(mem: TrainMemory, i=None) -> str:
    """'activations 112 GB (of 131 GB) > 80 GB usable HBM' for point i (flat index) that does not fit."""
    def pick(x):
        a = np.ravel(np.broadcast_to(_a(x), np.shape(mem.total_bytes)))
        return float(a[0 if i is None else i])

    terms = {t: pick(getattr(mem, f"{t}_bytes")) for t in MEMORY_TERMS}
    total, hbm = pick(mem.total_bytes), pick(mem.hbm_bytes)
    worst = max(terms, key=terms.get)
    alone = " alone exceeds HBM" if terms[worst] > hbm else ""
    parts = " + ".join(f"{t} {fmt_bytes(v)}" for t, v in terms.items())
    return (f"does not fit: {worst} is the largest term ({fmt_bytes(terms[worst])}{alone}; recompute "
            f"{mem.strategy}): {parts} = {fmt_bytes(total)} > {fmt_bytes(hbm)} usable HBM per chip")
