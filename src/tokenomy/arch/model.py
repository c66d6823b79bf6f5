"""The canonical per-layer description every adapter produces and every formula consumes.

Notation (docs/notation.md): D = hidden_size, H = num_attention_heads, K = num_key_value_heads,
d = head_dim, F = intermediate_size, E = routed experts, k = experts per token, V = vocab_size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tokenomy.arch.routing import ExpertBalance

AttentionKind = Literal["mha", "gqa", "mqa", "mla", "linear"]
MlpKind = Literal["dense", "moe"]


@dataclass(frozen=True)
class Attention:
    """One attention (token-mixing) layer. ``window`` caps the cached length (sliding window); None = global.

    KV elements per cached entry per layer: GQA/MHA/MQA 2·K·d (K and V), MLA kv_lora_rank + qk_rope_head_dim
    (DeepSeek-V2 paper, arXiv 2405.04434, eq. 9-10: only the compressed latent and the shared rope key are cached).
    Which entries are cached and attended (window, chunk, compression, top-k): arch/positions.py.
    Indexed sparse attention (DSA, DeepSeek-V3.2): an indexer of ``index_n_heads`` x ``index_head_dim`` scores every
    cached entry against one cached index key of ``index_head_dim`` elements; the core attends ``index_topk``.
    ``kind == "linear"`` (Gated DeltaNet, KimiLinear, Mamba-2 mixers): no KV cache; a fixed state of
    ``state_elems`` per sequence read and written each step and ``state_flops_per_token`` FLOPs per token, with
    projection weights ``explicit_params`` counted by the adapter from the config.
    """

    kind: AttentionKind
    num_heads: int  # H
    num_kv_heads: int  # K (1 for MQA; for MLA the number of heads, kept for reference)
    head_dim: int  # d of q·k (for MLA: qk_nope_head_dim + qk_rope_head_dim)
    v_head_dim: int
    window: int | None = None
    bias: bool = False
    q_lora_rank: int | None = None  # MLA only
    kv_lora_rank: int = 0  # MLA only
    qk_rope_head_dim: int = 0  # MLA only
    qk_norm: bool = False  # Qwen3 / Gemma3 per-head RMSNorm on q and k
    chunk: int | None = None  # chunked local attention: a token attends only its own chunk (Llama-4)
    compress_ratio: int | None = None  # beyond the window, one compressed cache entry per r tokens (DeepSeek-V4)
    index_topk: int | None = None  # indexed sparse attention: the core attends the top-k entries (DSA)
    index_n_heads: int = 0
    index_head_dim: int = 0
    state_elems: int = 0  # linear / SSM layers: state per sequence
    state_flops_per_token: int = 0
    scan_flops_per_token: int = 0  # Mamba-2: forward FLOPs per token of the chunked (SSD) scan's kernels (training)
    explicit_params: int | None = None  # projection weights, when the adapter counts them
    variant: str = ""  # what the config calls the kind (e.g. "gated_deltanet", "mamba2", "dsa", "csa")

    def describe(self) -> str:
        """The layer's kind as people name it: 'gqa', 'mla dsa top-2048', 'gqa sliding 1024', 'linear gated_deltanet'."""
        parts = [self.kind + (f" {self.variant}" if self.variant else "")]
        if self.window:
            parts.append(f"sliding {self.window}")
        if self.chunk:
            parts.append(f"chunked {self.chunk}")
        if self.compress_ratio:
            parts.append(f"compressed 1/{self.compress_ratio}")
        if self.index_topk:
            parts.append(f"top-{self.index_topk}")
        return " ".join(parts)

    def kv_elements_per_token(self) -> int:
        """Elements per cached entry (0 for linear layers, which keep a state instead)."""
        if self.kind == "linear":
            return 0
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.num_kv_heads * (self.head_dim + self.v_head_dim)

    def index_elements_per_token(self) -> int:
        """The indexer's cached key per entry (DSA: one key of index_head_dim); 0 without an indexer."""
        return self.index_head_dim if self.index_topk else 0

    def index_flops_per_position(self) -> int:
        """Indexer FLOPs per new token per cached entry: 2·index_n_heads·index_head_dim (q·k of every head)."""
        return 2 * self.index_n_heads * self.index_head_dim if self.index_topk else 0

    def params(self, D: int) -> int:
        """Weight count of the projections (and their biases / norms)."""
        if self.explicit_params is not None:
            return self.explicit_params
        H, K, d, dv = self.num_heads, self.num_kv_heads, self.head_dim, self.v_head_dim
        if self.kind == "mla":
            r, c, rope = self.q_lora_rank, self.kv_lora_rank, self.qk_rope_head_dim
            nope = d - rope
            q = D * H * d if r is None else D * r + r + r * H * d  # down, norm, up
            kv = D * (c + rope) + c + c * H * (nope + dv)  # joint down, norm, up to K_nope and V
            return q + kv + H * dv * D
        p = D * H * d + D * K * d + D * K * dv + H * dv * D
        if self.bias:
            p += H * d + K * d + K * dv + D
        if self.qk_norm:
            p += 2 * d
        return p

    def score_dims(self, absorbed: bool) -> int:
        """Per head and per context token, multiply-adds of q·k plus p·v.

        MLA decode runs "absorbed" (W_UK folded into q, W_UV after attention; DeepSeek-V2 §2.1.3),
        attending in the latent space: (c + rope) + c. Prefill runs un-absorbed: d + dv.
        """
        if self.kind == "linear":
            return 0
        if self.kind == "mla" and absorbed:
            return 2 * self.kv_lora_rank + self.qk_rope_head_dim
        return self.head_dim + self.v_head_dim

    def unabsorb_flops_per_position(self) -> int:
        """FLOPs to expand one cached position to per-head K and V for the un-absorbed form: 2·c·H·(d_nope + d_v)
        for MLA (the W_UK, W_UV up-projections of the latent, DeepSeek-V2 eq. 10); 0 for caches that hold K, V."""
        if self.kind != "mla":
            return 0
        return 2 * self.kv_lora_rank * self.num_heads * (self.head_dim - self.qk_rope_head_dim + self.v_head_dim)


@dataclass(frozen=True)
class Mlp:
    """Dense MLP or MoE. Gated (SwiGLU/GeGLU) MLPs have 3 matrices, ungated 2.

    MoE: ``num_experts`` routed experts of width ``expert_intermediate_size``, ``experts_per_tok`` chosen per
    token, plus ``num_shared_experts`` always-on experts of width ``shared_intermediate_size``. Group-limited
    routing (config.json ``n_group``, ``topk_group``): the experts form ``n_group`` equal groups and a token's
    experts come from its best ``topk_group`` of them (DeepSeek-V3 report §2.1.2 and §3.2.2: node-limited routing,
    groups laid out on nodes); 1 and 1, no limit.
    """

    kind: MlpKind
    intermediate_size: int = 0  # F of the dense MLP
    gated: bool = True
    bias: bool = False
    num_experts: int = 0
    experts_per_tok: int = 0
    n_group: int = 1
    topk_group: int = 1
    expert_intermediate_size: int = 0
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0
    router_bias: bool = False
    dispatch_size: int = 0  # elements per token an EP dispatch or combine moves: a latent MoE's moe_latent_size
    #                         (projected down before the dispatch, up after the combine); 0 = hidden_size

    def _matrices(self) -> int:
        return 3 if self.gated else 2

    def dense_params(self, D: int) -> int:
        """Parameters every token uses: dense MLP, or router + shared experts of an MoE."""
        m = self._matrices()
        if self.kind == "dense":
            return m * D * self.intermediate_size + (m - 1) * self.intermediate_size * self.bias + D * self.bias
        router = D * self.num_experts + self.num_experts * self.router_bias
        return router + self.num_shared_experts * m * D * self.shared_intermediate_size

    def expert_params(self, D: int) -> int:
        """Parameters of one routed expert."""
        if self.kind == "dense":
            return 0
        F = self.expert_intermediate_size
        m = self._matrices()
        return m * D * F + ((m - 1) * F + D) * self.bias


@dataclass(frozen=True)
class Layer:
    attention: Attention
    mlp: Mlp
    norms: int = 2  # RMSNorm/LayerNorm weight vectors of width D


@dataclass(frozen=True)
class Quantization:
    """Bytes per parameter for each category of weights, as the checkpoint stores them."""

    dense: str = "bf16"  # attention, dense MLP, router, shared experts
    expert: str = "bf16"  # routed experts
    embed: str = "bf16"  # embedding and LM head
    note: str = ""


@dataclass(frozen=True)
class ModelArch:
    """A model as a list of layers plus embeddings. Built by ``arch.hf`` from a config.json."""

    name: str
    model_type: str
    hidden_size: int
    vocab_size: int
    layers: tuple[Layer, ...]
    tie_word_embeddings: bool = False
    parallel_block: bool = False  # PaLM/GPT-J: attention and MLP read the same normed input
    quantization: Quantization = field(default_factory=Quantization)
    source: str = ""
    max_position_embeddings: int | None = None
    extra_params: int = 0  # documented extras outside the layers (e.g. attention sinks)
    state_dtype: str = "bf16"  # linear / SSM state (Qwen3.5's mamba_ssm_dtype float32 -> "fp32")
    residual_streams: int = 1  # hyper-connections (DeepSeek-V4 hc_mult): the residual stream is n·D wide
    mtp_layers: int = 0  # multi-token-prediction modules (num_nextn_predict_layers / mtp_num_hidden_layers): not
    #                      part of the served forward pass or its parameter count; a speculative draft when used
    expert_balance: ExpertBalance | None = None  # the router's measured load balance by EP size (arch/routing.py,
    #                                              catalog/models/routing.toml); None: balls in bins

    @property
    def num_layers(self) -> int:
        return len(self.layers)
