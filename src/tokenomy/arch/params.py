"""Parameter counts and weight bytes, summed over the per-layer description.

total  = embeddings (+ untied head) + Σ_layers (attention + dense/shared MLP + E·expert + norms) + final norm
active = the same with k experts per MoE layer instead of E (what one token touches).
"""

from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from tokenomy.arch.model import ModelArch
from tokenomy.arch.positions import cached, indexed
from tokenomy.units import dtype_bytes


@dataclass(frozen=True)
class ParamCounts:
    embed: int  # input embedding (a gather: capacity, no FLOPs)
    head: int  # LM head (0 when tied: the embedding matrix is reused, counted once)
    dense: int  # every-token weights inside the layers: attention, dense MLP, router, shared experts, norms
    expert_total: int  # all routed experts
    expert_active: int  # k routed experts per MoE layer
    extra: int = 0

    @property
    def total(self) -> int:
        return self.embed + self.head + self.dense + self.expert_total + self.extra

    @property
    def active(self) -> int:
        return self.embed + self.head + self.dense + self.expert_active + self.extra

    @property
    def matmul_active(self) -> int:
        """Weights a token multiplies by: 2 FLOPs each per token. Tied models multiply the embedding as head."""
        return self.dense + self.expert_active + (self.head or self.embed)


def count_params(m: ModelArch) -> ParamCounts:
    D = m.hidden_size
    embed = m.vocab_size * D
    head = 0 if m.tie_word_embeddings else m.vocab_size * D
    dense = D  # final norm
    expert_total = expert_active = 0
    for layer in m.layers:
        dense += layer.attention.params(D) + layer.mlp.dense_params(D) + layer.norms * D
        e = layer.mlp.expert_params(D)
        expert_total += layer.mlp.num_experts * e
        expert_active += layer.mlp.experts_per_tok * e
    return ParamCounts(embed, head, dense, expert_total, expert_active, m.extra_params)


def kv_bytes_per_token(m: ModelArch, kv_dtype: str = "bf16") -> float:
    """Σ_layers kv_elements · bytes, for a context shorter than every window.

    Llama-3.1-70B bf16: 80·2·8·128·2 = 327,680; DeepSeek-V3 MLA bf16: 61·576·2 = 70,272.
    """
    b = dtype_bytes(kv_dtype)
    return float(sum(layer.attention.kv_elements_per_token() for layer in m.layers) * b)


def kv_bytes_at_context(m: ModelArch, context: float, kv_dtype: str = "bf16") -> float:
    """KV bytes of one sequence holding ``context`` tokens: Σ_layers (kv·cached(C) + index keys·indexed(C))·bytes,
    with the entries each kind keeps (sliding window, chunk, compression: arch/positions); linear layers keep none."""
    b = dtype_bytes(kv_dtype)
    total = 0.0
    for layer in m.layers:
        a = layer.attention
        where = (a.window or np.inf, 1.0 / a.compress_ratio if a.compress_ratio else 0.0, a.chunk or np.inf)
        total += (a.kv_elements_per_token() * float(cached(context, *where))
                  + a.index_elements_per_token() * float(indexed(context, *where))) * b
    return total


def state_bytes_per_sequence(m: ModelArch) -> float:
    """The fixed state of linear-attention / SSM layers, per sequence: Σ_layers state_elems · bytes (state dtype)."""
    return float(sum(layer.attention.state_elems for layer in m.layers) * dtype_bytes(m.state_dtype))


def weight_bytes(m: ModelArch, weight_dtype: str | None = None) -> float:
    """Bytes of all weights, at the checkpoint's own quantization unless ``weight_dtype`` overrides it."""
    p = count_params(m)
    q = m.quantization
    bd, be, bm = (dtype_bytes(weight_dtype),) * 3 if weight_dtype else (
        dtype_bytes(q.dense), dtype_bytes(q.expert), dtype_bytes(q.embed))
    return (p.dense + p.extra) * bd + p.expert_total * be + (p.embed + p.head) * bm
