"""Reversible transformer block: F = pre-norm causal self-attention, G = pre-norm MLP.

    y1 = x1 + Attn(LN(x2))        (B, T, D) each stream, D = d_stream
    y2 = x2 + MLP(LN(y1))

The layout of the Reformer (Kitaev et al. 2020, sec. 3) and RevViT (Mangalam et al.
2022): the usual two residual sub-layers of a transformer layer become the two halves
of one Feistel round. Any ``nn.Module`` mapping (B, T, D) -> (B, T, D) may replace the
default attention or MLP.
"""

from __future__ import annotations

import torch
import torch.nn.functional as fn
from torch import nn

from tokenomy.reversible.coupling import AdditiveCoupling


class CausalSelfAttention(nn.Module):
    """Pre-norm multi-head causal attention, softmax(QK^T / sqrt(D/H) + mask) V (Vaswani 2017).

    ``attn_dropout`` drops attention probabilities (random, replayed in backward);
    ``dropout`` drops the projected output.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0,
                 attn_dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.norm = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.attn_dropout = attn_dropout
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        H = self.n_heads
        q, k, v = self.qkv(self.norm(x)).split(D, dim=-1)  # 3 x (B, T, D)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D/H)
        p = self.attn_dropout if self.training else 0.0
        a = fn.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.dropout(self.proj(a.transpose(1, 2).reshape(B, T, D)))


class MLP(nn.Module):
    """Pre-norm feed-forward, W2 GELU(W1 LN(x)) with hidden width mlp_ratio * D."""

    def __init__(self, d_model: int, mlp_ratio: int = 4, dropout: float = 0.0,
                 bias: bool = True) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, mlp_ratio * d_model, bias=bias)
        self.fc2 = nn.Linear(mlp_ratio * d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.fc2(fn.gelu(self.fc1(self.norm(x)))))


class ReversibleTransformerBlock(AdditiveCoupling):
    """Coupling block with F = attention and G = MLP (defaults) or any given modules."""

    def __init__(self, d_stream: int, n_heads: int, mlp_ratio: int = 4,
                 dropout: float = 0.0, attn_dropout: float = 0.0,
                 attention: nn.Module | None = None, mlp: nn.Module | None = None) -> None:
        f = attention if attention is not None else CausalSelfAttention(
            d_stream, n_heads, dropout=dropout, attn_dropout=attn_dropout)
        g = mlp if mlp is not None else MLP(d_stream, mlp_ratio, dropout=dropout)
        super().__init__(f, g)
