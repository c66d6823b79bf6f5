"""Sum a model's op list into the dozen coefficients the vectorised engine needs.

Stacking the coefficients of many models gives arrays, so a grid of models x hardware x batch x context
is one broadcast expression (core/engine.py). The sums are generic over ops (DESIGN.md rule 4). ``keep`` sums only
the ops it accepts (resident capacity stays the whole model's), so the engine run on one op group at a time splits a
pass by op: the engine is linear in these sums, so the parts add up to the whole (core/op_costs.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

import numpy as np

from tokenomy.arch.kernels import layer_kernels
from tokenomy.arch.model import ModelArch
from tokenomy.arch.ops import Op, lower
from tokenomy.arch.params import count_params
from tokenomy.arch.routing import ExpertBalance
from tokenomy.units import dtype_bytes


@dataclass(frozen=True)
class ModelCoeffs:
    """Per-pass cost coefficients (floats, or arrays when stacked). Params by weight category."""

    dense_params: object  # read every pass: attention, dense MLP, router, shared experts, norms
    head_params: object  # LM head read every pass (the embedding when tied)
    dense_w: object  # native bytes/param of dense weights
    embed_w: object  # native bytes/param of embedding/head
    expert_w: object  # native bytes/param of routed experts
    capacity_dense_params: object  # resident parameters, by category
    capacity_embed_params: object
    capacity_expert_params: object
    matmul_flops_per_token: object  # 2·(dense + head + k·expert) per MoE layer
    moe_layers: object  # number of MoE layers (all alike)
    num_experts: object  # E (1 for dense models: the formulas then add nothing)
    experts_per_tok: object  # k
    n_group: object  # expert groups and the most a token's experts come from (1, 1: no limit; arch/model.py Mlp)
    topk_group: object
    expert_params: object  # one expert
    # weights per element of GEMM depth, Σ p_j/K_j, of the dense (+ head) GEMMs and of one routed expert, for the
    # GEMMs whose K stays whole under TP and those whose K it splits (arch/gemm_depth.py; core/work.py's depth FLOPs)
    dense_depth_whole: object
    dense_depth_split: object
    expert_depth_whole: object
    expert_depth_split: object
    act_elems_per_token: object
    act_peak_elems_per_token: object  # widest single op: the live activation working set per token
    # attention classes: layers alike in what they cache and attend (arch/positions.py), summed per class; every
    # array has the class axis last (K classes, padded with empty ones when models are stacked)
    attn_kv: object  # KV elements per cached entry
    attn_window: object  # sliding window (inf: none)
    attn_ratio: object  # 1/r compressed entries per token beyond the window (0: none)
    attn_chunk: object  # chunked local attention's chunk (inf: none)
    attn_topk: object  # entries the core attends with an indexer (inf: all)
    attn_score_absorbed: object  # FLOPs per new token per attended entry, absorbed form (MLA) / the only form
    attn_score_plain: object  # ... plain (un-absorbed) form
    attn_unabsorb: object  # FLOPs per cached entry per sequence to run the plain form
    attn_index_kv: object  # indexer key elements per cached entry
    attn_index_flops: object  # indexer FLOPs per new token per cached entry
    state_elems: object  # linear / SSM state per sequence, all layers
    state_flops_per_token: object
    kernels: object  # kernels every layer launches in a forward step, summed (arch/kernels.py)

    @property
    def kv_elems_per_token(self):
        """Elements cached per token while the context is shorter than every window and chunk, uncompressed."""
        return np.sum(np.asarray(self.attn_kv, dtype=float) * np.where(np.asarray(self.attn_ratio) > 0, 0.0, 1.0)
                      + np.asarray(self.attn_index_kv, dtype=float), axis=-1)

    def stack(self: "ModelCoeffs", *others: "ModelCoeffs") -> "ModelCoeffs":
        return stack([self, *others])


def coefficients(m: ModelArch, keep: Callable[[Op], bool] | None = None) -> ModelCoeffs:
    """The op list (or the ops ``keep`` accepts) summed into the engine's coefficients."""
    ops, p, q = lower(m), count_params(m), m.quantization
    if keep is not None:
        ops = [o for o in ops if keep(o)]
    experts = [o for o in ops if o.kind == "expert"]
    if len({(o.num_experts, o.experts_per_tok, o.n_group, o.topk_group, o.params) for o in experts}) > 1:
        raise ValueError(f"model {m.name}: MoE layers differ in shape; the engine assumes one expert shape")
    att = [o for o in ops if o.kind == "attention"]
    e = experts[0] if experts else None
    dense = sum(o.params for o in ops if o.kind == "matmul" and o.category == "dense")
    head = sum(o.params for o in ops if o.kind == "matmul" and o.category == "embed")
    return ModelCoeffs(
        dense_params=float(dense), head_params=float(head),
        dense_w=dtype_bytes(q.dense), embed_w=dtype_bytes(q.embed), expert_w=dtype_bytes(q.expert),
        capacity_dense_params=float(p.dense + p.extra), capacity_embed_params=float(p.embed + p.head),
        capacity_expert_params=float(p.expert_total),
        matmul_flops_per_token=2.0 * (dense + head + sum(o.experts_per_tok * o.params for o in experts)),
        moe_layers=float(len(experts)), num_experts=float(e.num_experts if e else 1),
        experts_per_tok=float(e.experts_per_tok if e else 0), expert_params=float(e.params if e else 0),
        n_group=float(e.n_group if e else 1), topk_group=float(e.topk_group if e else 1),
        dense_depth_whole=float(sum(o.depth_whole for o in ops if o.kind == "matmul")),
        dense_depth_split=float(sum(o.depth_split for o in ops if o.kind == "matmul")),
        expert_depth_whole=float(e.depth_whole if e else 0.0), expert_depth_split=float(e.depth_split if e else 0.0),
        act_elems_per_token=float(sum(o.act_elems_per_token for o in ops)),
        act_peak_elems_per_token=float(max((o.act_elems_per_token for o in ops), default=0.0)),
        **attention_classes(att),
        state_elems=float(sum(o.state_elems for o in att)),
        state_flops_per_token=float(sum(o.state_flops_per_token for o in att)),
        kernels=float(sum(layer_kernels(m.layers[i]) for i in sorted({o.layer for o in ops if o.layer >= 0}))),
    )


CLASS_FIELDS = ("attn_kv", "attn_window", "attn_ratio", "attn_chunk", "attn_topk", "attn_score_absorbed",
                "attn_score_plain", "attn_unabsorb", "attn_index_kv", "attn_index_flops")
EMPTY_CLASS = (0.0, np.inf, 0.0, np.inf, np.inf, 0.0, 0.0, 0.0, 0.0, 0.0)  # caches and attends nothing


def attention_classes(att: list[Op]) -> dict[str, np.ndarray]:
    """Attention ops grouped by (window, compression, chunk, top-k) and summed per group: the engine's classes."""
    groups: dict[tuple, list[Op]] = {}
    for o in att:
        key = (o.window or np.inf, 1.0 / o.compress_ratio if o.compress_ratio else 0.0, o.chunk or np.inf,
               o.index_topk or np.inf)
        groups.setdefault(key, []).append(o)
    rows = [(sum(o.kv_elems_per_token for o in g), *key, sum(o.score_flops_decode for o in g),
             sum(o.score_flops_prefill for o in g), sum(o.unabsorb_flops_per_position for o in g),
             sum(o.index_elems_per_token for o in g), sum(o.index_flops_per_position for o in g))
            for key, g in groups.items()]
    rows = rows or [EMPTY_CLASS]
    cols = np.array(rows, dtype=float).T
    return {f: cols[i] for i, f in enumerate(CLASS_FIELDS)}


@dataclass(frozen=True)
class ModelShape:
    """What a layout needs beyond the coefficients: the dimensions that decide splits and collectives."""

    name: str
    coeffs: ModelCoeffs
    hidden_size: int  # D
    num_layers: int  # L
    num_heads: int  # H (query heads)
    kv_heads: int  # distinct K/V heads a head-split can spread: 1 for MQA and MLA (one shared latent)
    head_dim: int
    parallel_block: bool  # attention and MLP outputs reduced together (one all-reduce per layer)
    dense_flops_per_token: float  # 2·(dense + head) params: the part attention-DP replicates
    dispatch_size: int = 0  # elements per token of an EP dispatch/combine (a latent MoE's latent size); 0 = D
    expert_balance: ExpertBalance | None = None  # the router's measured balance by EP size (arch/routing.py)


def shape_of(m: ModelArch, coeffs: ModelCoeffs | None = None) -> ModelShape:
    c = coeffs or coefficients(m)
    a = m.layers[0].attention
    moe = next((ly.mlp for ly in m.layers if ly.mlp.kind == "moe"), None)
    return ModelShape(m.name, c, m.hidden_size, m.num_layers, a.num_heads, 1 if a.kind == "mla" else a.num_kv_heads,
                      a.head_dim, m.parallel_block, 2.0 * (float(c.dense_params) + float(c.head_params)),
                      (moe.dispatch_size if moe is not None else 0) or m.hidden_size, m.expert_balance)


def _pad(a, k: int, fill: float) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return np.concatenate([a, np.full(k - a.shape[-1], fill)])


def stack(items: list[ModelCoeffs]) -> ModelCoeffs:
    """Coefficients of several models as arrays with one entry per model (classes padded to the most classes)."""
    k = max(np.shape(c.attn_kv)[-1] for c in items)
    out = {}
    for f in fields(ModelCoeffs):
        if f.name in CLASS_FIELDS:
            fill = EMPTY_CLASS[CLASS_FIELDS.index(f.name)]
            out[f.name] = np.stack([_pad(getattr(c, f.name), k, fill) for c in items])
        else:
            out[f.name] = np.array([getattr(c, f.name) for c in items], dtype=float)
    return ModelCoeffs(**out)


def reshape(c: ModelCoeffs, shape: tuple[int, ...]) -> ModelCoeffs:
    """Give every coefficient array ``shape`` (class arrays ``shape`` + their class axis) to broadcast on a grid."""
    return ModelCoeffs(**{f.name: np.reshape(getattr(c, f.name), (*shape, np.shape(getattr(c, f.name))[-1])
                                             if f.name in CLASS_FIELDS else shape) for f in fields(ModelCoeffs)})
