"""Lower a ModelArch, once, to a flat list of ops. Everything downstream is a generic sum over it.

Each op states its cost as coefficients of the pass shape, so one list serves every batch, context and
pass length: for T = B·len_pass new tokens attending over a context of C positions,
    matmul     FLOPs = 2·params·T                         bytes = params·w   (read once per pass)
    expert     FLOPs = 2·k·params·T                       bytes = params·w·E·(1-(1-k/E)^T) (distinct experts touched)
    attention  FLOPs = min(absorbed, plain + un-absorb)    bytes = B·C_eff·kv_elems·kv_b (read) + T·kv_elems·kv_b (write)
               absorbed = 2·H·score_dims(absorbed)·C_eff·T, plain = 2·H·score_dims·C_eff·T,
               un-absorb = B·(C − len_pass)·unabsorb_flops (MLA: expanding the cached latents to K and V once per
               pass); a kernel picks the cheaper form, so decode and short passes run absorbed, prefill plain
    embed      FLOPs = 0 (a gather)                       bytes = T rows (negligible), capacity = params·w
with C_eff = min(C, window). Activations: act_elems·T elements read or written between ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tokenomy.arch.gemm_depth import attention_depth, dense_mlp_depth, expert_depth
from tokenomy.arch.model import ModelArch
from tokenomy.arch.params import count_params

OpKind = Literal["matmul", "expert", "attention", "embed"]
Category = Literal["dense", "expert", "embed"]


@dataclass(frozen=True)
class Op:
    name: str
    kind: OpKind
    layer: int  # -1 for embedding/head/final norm
    params: int = 0  # for "expert": parameters of ONE expert
    category: Category = "dense"  # which quantization applies to its weights
    num_experts: int = 0
    experts_per_tok: int = 0
    n_group: int = 1  # group-limited routing (arch/model.py Mlp)
    topk_group: int = 1
    # attention only: FLOPs per new token per attended position, decode (absorbed MLA) and prefill forms
    score_flops_decode: float = 0.0
    score_flops_prefill: float = 0.0
    unabsorb_flops_per_position: float = 0.0  # per cached position per sequence, to run the plain form
    kv_elems_per_token: int = 0
    window: int | None = None
    chunk: int | None = None  # which entries are cached and attended: arch/positions.py
    compress_ratio: int | None = None
    index_topk: int | None = None
    index_elems_per_token: int = 0  # DSA: the indexer's cached key per entry
    index_flops_per_position: float = 0.0  # DSA: indexer FLOPs per new token per cached entry
    state_elems: int = 0  # linear / SSM mixers: state per sequence, read and written each pass
    state_flops_per_token: float = 0.0
    act_elems_per_token: float = 0.0  # activation elements read + written by this op per token
    # weights per element of contraction depth, Σ p_j/K_j over the op's GEMMs, whose K stays whole under TP
    # (column-parallel) and whose K TP splits (row-parallel): arch/gemm_depth.py; for "expert", ONE expert's
    depth_whole: float = 0.0
    depth_split: float = 0.0


def _layer_ops(m: ModelArch, i: int) -> list[Op]:
    layer, D = m.layers[i], m.hidden_size
    a, mlp = layer.attention, layer.mlp
    # hyper-connections: each of the layer's two sublayers reads its n·D-wide residual streams to mix its input and
    # writes them back, (n - 1)·D more elements each way than a plain residual (DeepSeek-V4, hc_mult)
    hc_act = 2 * 2 * (m.residual_streams - 1) * D
    qkv_width = a.num_heads * a.head_dim + a.kv_elements_per_token()
    attn_whole, attn_split = attention_depth(a, D)
    ops = [
        Op(f"L{i}.attn.proj", "matmul", i, a.params(D) + layer.norms * D,
           act_elems_per_token=2 * D + qkv_width + a.num_heads * a.v_head_dim + hc_act,
           depth_whole=attn_whole, depth_split=attn_split),
        Op(f"L{i}.attn.scores", "attention", i, score_flops_decode=2 * a.num_heads * a.score_dims(True),
           score_flops_prefill=2 * a.num_heads * a.score_dims(False),
           unabsorb_flops_per_position=a.unabsorb_flops_per_position(), kv_elems_per_token=a.kv_elements_per_token(),
           window=a.window, chunk=a.chunk, compress_ratio=a.compress_ratio, index_topk=a.index_topk,
           index_elems_per_token=a.index_elements_per_token(), index_flops_per_position=a.index_flops_per_position(),
           state_elems=a.state_elems, state_flops_per_token=a.state_flops_per_token,
           act_elems_per_token=qkv_width + a.num_heads * a.v_head_dim),
    ]
    width = mlp.intermediate_size if mlp.kind == "dense" else mlp.num_shared_experts * mlp.shared_intermediate_size
    dense = mlp.dense_params(D)
    if dense:
        whole, split = dense_mlp_depth(mlp, D)
        ops.append(Op(f"L{i}.mlp", "matmul", i, dense, act_elems_per_token=2 * D + 2 * width, depth_whole=whole,
                      depth_split=split))
    if mlp.kind == "moe":
        whole, split = expert_depth(mlp, D)
        ops.append(Op(f"L{i}.experts", "expert", i, mlp.expert_params(D), "expert", mlp.num_experts,
                      mlp.experts_per_tok, n_group=mlp.n_group, topk_group=mlp.topk_group,
                      act_elems_per_token=mlp.experts_per_tok * 3 * mlp.expert_intermediate_size,
                      depth_whole=whole, depth_split=split))
    return ops


def lower(m: ModelArch) -> list[Op]:
    """The op list of one forward pass: embedding, per-layer ops, final norm + LM head."""
    p = count_params(m)
    ops = [Op("embed", "embed", -1, p.embed, "embed", act_elems_per_token=m.hidden_size)]
    for i in range(m.num_layers):
        ops.extend(_layer_ops(m, i))
    ops.append(Op("final_norm", "matmul", -1, m.hidden_size + p.extra, "dense"))
    # A tied head multiplies by the embedding matrix: FLOPs and bytes read each pass, no extra capacity.
    head = p.embed if m.tie_word_embeddings else p.head
    ops.append(Op("lm_head", "matmul", -1, head, "embed", act_elems_per_token=m.hidden_size + m.vocab_size,
                  depth_whole=head / m.hidden_size))  # K = D, vocab-parallel (N split)
    return ops
