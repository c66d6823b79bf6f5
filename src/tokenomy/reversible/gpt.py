"""A small reversible GPT: embeddings, a reversible stack, a language-model head.

    x0 = E_tok[idx] + E_pos[t]                         (B, T, D)
    (y1, y2) = stack(x0, x0)                           two streams, each of width D
    logits = W_head LN((y1 + y2) / 2)                  (B, T, V)

Both streams start from the embedding and are averaged at the end (so the twin and
the reversible model see one residual width D). Activation memory of the stack is O(1)
in num_hidden_layers; the embedding and head are ordinary layers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from types import MappingProxyType

import torch
import torch.nn.functional as fn
from torch import nn

from tokenomy.reversible.stack import ReversibleSequence, StandardTwin
from tokenomy.reversible.transformer import ReversibleTransformerBlock


# name -> (num_hidden_layers, num_attention_heads, d_stream)
SIZES = MappingProxyType({
    "nano": (2, 2, 32),
    "micro": (4, 4, 64),
    "mini": (6, 4, 128),
    "small": (12, 8, 256),
})


@dataclass(frozen=True)
class RevGPTConfig:
    """Size of a reversible GPT (HF-style names; d_stream is the width of each stream)."""

    vocab_size: int = 96
    max_position_embeddings: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    d_stream: int = 64
    mlp_ratio: int = 4
    dropout: float = 0.0

    @classmethod
    def from_size(cls, size: str, **overrides) -> "RevGPTConfig":
        """A named size ('nano', 'micro', 'mini', 'small') with optional field overrides."""
        if size not in SIZES:
            raise ValueError(f"size={size!r}; allowed: {', '.join(SIZES)}")
        layers, heads, width = SIZES[size]
        fields = dict(num_hidden_layers=layers, num_attention_heads=heads, d_stream=width)
        fields.update(overrides)
        return cls(**fields)

    def parameter_count(self) -> int:
        """Closed form: embeddings + L x (attn 4D^2+4D, MLP 2rD^2+(r+1)D, 2 LN 4D) + LN + head."""
        D, L, V, r = self.d_stream, self.num_hidden_layers, self.vocab_size, self.mlp_ratio
        per_layer = (4 * D * D + 4 * D) + (2 * r * D * D + (r + 1) * D) + 4 * D
        return V * D + self.max_position_embeddings * D + L * per_layer + 2 * D + D * V


class RevGPT(nn.Module):
    """Decoder-only language model whose transformer layers are reversible blocks."""

    def __init__(self, config: RevGPTConfig, reversible: bool = True) -> None:
        super().__init__()
        self.config = config
        D = config.d_stream
        self.tok = nn.Embedding(config.vocab_size, D)
        self.pos = nn.Embedding(config.max_position_embeddings, D)
        self.drop = nn.Dropout(config.dropout)
        self.stack = ReversibleSequence(
            [ReversibleTransformerBlock(D, config.num_attention_heads, config.mlp_ratio,
                                        dropout=config.dropout, attn_dropout=config.dropout)
             for _ in range(config.num_hidden_layers)],
            reversible=reversible,
        )
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, config.vocab_size, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None,
                reversible: bool | None = None):
        """Logits (B, T, V) and, with ``targets``, the mean next-token cross-entropy."""
        B, T = idx.shape
        if T > self.config.max_position_embeddings:
            raise ValueError(f"sequence length {T} > max_position_embeddings="
                             f"{self.config.max_position_embeddings}")
        positions = torch.arange(T, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(positions))  # (B, T, D)
        y1, y2 = self.stack(x, x, reversible=reversible)
        logits = self.head(self.norm(0.5 * (y1 + y2)))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = fn.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss

    def twin(self, share_parameters: bool = True) -> StandardTwin:
        """Standard (non-reversible) twin: same parameters (shared, or a deep copy)."""
        return StandardTwin(self if share_parameters else copy.deepcopy(self))
