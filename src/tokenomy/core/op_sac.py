"""torchtitan's op-level selective activation checkpointing (recompute "op"): what it stores and what it recomputes.

torchtitan wraps each transformer block in a checkpoint whose policy saves the outputs of the ops in ``_save_list``
(aten.mm, the SDPA flash/efficient kernels, the c10d reduce_scatter, abs and max) "except every second mm", counted
per block in forward order, and recomputes everything else from the block's input (torchtitan
torchtitan/parallelisms/parallelize_llama.py at 9dec370, 2024-12: ``_save_list``, ``_custom_policy``; the default
of its Llama 3 configs, ``selective_ac_option = 'op'``). A Llama block runs its mms in the order
    q, k, v, o (attention), w1, w3, w2 (gated MLP: w2(silu(w1 x) · w3 x)), or up, down (ungated)
so it keeps q, v, w1, w2 (the 1st, 3rd, 5th, 7th) and recomputes k, o, w3. Per token of a layer it stores
    e·D/r (the block's input) + e·Σ_saved width_i (column-parallel outputs /t, row-parallel partial sums whole)
    + e·H·dv/t + 4·H/t (SDPA output and its fp32 log-sum-exp) + 2·e·D/r with sequence parallelism (the
    reduce-scatters' outputs)
and recomputes Σ_recomputed 2·d_in·d_out FLOPs per token (the attention itself is saved, never recomputed). Under
Float8 the policy sees aten.mm before torchao's Float8 tensor dispatches it (a dispatch mode runs before a subclass),
so the same mms are saved, in 16 bits; the saved abs outputs fuse into the amax reduction under torch.compile
(torchtitan's own Float8 and BF16 peaks differ by 0.2 GiB: 76.8 vs 77.0 GiB, docs/performance.md Table 1), so they
are not counted. Defined for MHA/GQA attention and a dense MLP (the blocks torchtitan's op policy was written for;
its MoE grouped GEMMs are not aten.mm).
"""

from __future__ import annotations

import numpy as np

from tokenomy.arch.model import Layer


def _mms(layer: Layer, D: int) -> list[tuple[float, float, bool]]:
    """The block's mms in forward order: (input width, output width, output split over TP ranks)."""
    a, mlp = layer.attention, layer.mlp
    if a.kind == "mla" or a.kind == "linear" or mlp.kind != "dense":
        raise ValueError("recompute: op (torchtitan's op-level policy) is defined for MHA/GQA attention with a "
                         f"dense MLP; this layer has {a.kind} attention and a {mlp.kind} MLP")
    F = mlp.intermediate_size
    attn = [(D, a.num_heads * a.head_dim, True), (D, a.num_kv_heads * a.head_dim, True),
            (D, a.num_kv_heads * a.v_head_dim, True), (a.num_heads * a.v_head_dim, D, False)]
    ffn = [(D, F, True), (D, F, True), (F, D, False)] if mlp.gated else [(D, F, True), (F, D, False)]
    return attn + ffn


def op_bytes_per_token(layer: Layer, D: int, tp, sp: bool, act_bytes: float):
    """Bytes one layer stores per local token under the op policy (module docstring)."""
    t = np.asarray(tp, dtype=float)
    r = t if sp else 1.0
    e, a = act_bytes, layer.attention
    saved = sum(e * (w_out / t if split else w_out + 0 * t)
                for i, (_, w_out, split) in enumerate(_mms(layer, D)) if i % 2 == 0)
    sdpa = e * a.num_heads * a.v_head_dim / t + 4.0 * a.num_heads / t
    reduce_scatters = 2 * e * D / r if sp else 0.0
    return e * D / r + saved + sdpa + reduce_scatters


def op_recompute_flops(layer: Layer, D: int) -> float:
    """FLOPs per token the backward repeats for one layer: the every-second mms, 2·d_in·d_out each."""
    return sum(2.0 * w_in * w_out for i, (w_in, w_out, _) in enumerate(_mms(layer, D)) if i % 2 == 1)
