"""Uneven pipeline stages: Megatron-Core's ``pipeline_model_parallel_layout`` and the slowest rank it makes.

A layout names what each virtual stage holds, in Megatron-Core's string form (megatron/core/transformer/
pipeline_parallel_layer_layout.py): "E" the embedding, "t" a transformer layer, "m" a multi-token-prediction module,
"L" the loss (the output head); "|" ends a stage; "x*n" and "(...)*n" repeat. Megatron-Bridge's DeepSeek-V3 recipe
(src/megatron/bridge/recipes/deepseek/deepseek_v3.py, set_deepseek_v3_pipeline_model_parallel_layout) maps
(pp, vp) = (16, 1), (8, 2), (4, 4) to "Et*4|(t*4|)*14tmL" (4 layers on each of the first 15 stages, 1 layer, the MTP
module and the loss on the last), and its performance presets (scripts/performance/configs/deepseek/
deepseek_workload_base_configs.py) give the same string for GB300 PP2 VP8 and "Et|(tt|)*30mL" for H100 PP8 VP4.

Rank r of p holds virtual stages r, r + p, ... (Megatron's interleaving), and runs all of them for every micro-batch,
so with unequal stages 1F1B's steady phase and its bubble are both paced by the slowest rank (each slot of the
schedule waits for it):

    imbalance = max_r Σ_{stages of r} F(stage) / (ceil(L/p)/L · (Σ_layers F_t + F_head))

the engine's stage being ceil(L/p)/L of the layers and the head. Per token forward FLOPs: F_t = 2·(the layer's
attention, dense-MLP and k active experts' parameters) + 2·H·(d_qk + d_v)·(s+1)/2 (causal core attention);
F_head = 2·D·V; an MTP module (DeepSeek-V3 report §2.2) = F of the last layer + its 2D -> D projection 2·2D·D + its own
head F_head; the embedding 0.
"""

from __future__ import annotations

import re

import numpy as np

from tokenomy.arch.model import Layer, ModelArch

_GROUP = re.compile(r"\(([^()]*)\)\*(\d+)")
_ONE = re.compile(r"([EtmL])\*(\d+)")


def parse(layout: str) -> list[str]:
    """The layout's virtual stages, each a string of E, t, m, L (module docstring's grammar)."""
    s = (layout or "").replace(" ", "")
    while _GROUP.search(s):
        s = _GROUP.sub(lambda g: g.group(1) * int(g.group(2)), s)
    s = _ONE.sub(lambda g: g.group(1) * int(g.group(2)), s)
    if not s or set(s) - set("EtmL|"):
        raise ValueError(f"pp_layout: {layout!r} is not a layout; use E, t, m, L, '|', 'x*n' and '(...)*n' "
                         "(Megatron-Core's pipeline_model_parallel_layout)")
    return s.rstrip("|").split("|")


def _layer_flops(ly: Layer, D: int, seq_len: float) -> float:
    a, mlp = ly.attention, ly.mlp
    gemm = a.params(D) + mlp.dense_params(D) + (mlp.experts_per_tok * mlp.expert_params(D) if mlp.kind == "moe"
                                                else 0.0)
    return 2.0 * gemm + 2.0 * a.num_heads * (a.head_dim + a.v_head_dim) * (seq_len + 1) / 2


def stage_flops(m: ModelArch, layout: str, seq_len: float) -> list[float]:
    """Forward FLOPs per token of each virtual stage of ``layout`` on ``m`` (layers taken in order)."""
    stages = parse(layout)
    n_t = sum(st.count("t") for st in stages)
    if n_t != m.num_layers:
        raise ValueError(f"pp_layout: {layout!r} holds {n_t} transformer layers; {m.name} has {m.num_layers}")
    D, head = m.hidden_size, 2.0 * m.hidden_size * m.vocab_size
    per_layer = [_layer_flops(ly, D, seq_len) for ly in m.layers]
    mtp = per_layer[-1] + 2.0 * 2 * D * D + head
    out, i = [], 0
    for st in stages:
        f = 0.0
        for c in st:
            if c == "t":
                f, i = f + per_layer[i], i + 1
            f += {"t": 0.0, "E": 0.0, "m": mtp, "L": head}[c]
        out.append(f)
    return out


def imbalance(m: ModelArch, layout: str, pp: int, vp: int, seq_len: float) -> float:
    """The slowest rank's forward FLOPs over the engine's even stage (module docstring); 1 without a layout."""
    if not layout:
        return 1.0
    flops = stage_flops(m, layout, seq_len)
    if len(flops) != pp * vp:
        raise ValueError(f"pp_layout: {len(flops)} stages; pp x virtual stages = {pp} x {vp} = {pp * vp}")
    ranks = [sum(flops[r::pp]) for r in range(pp)]
    D, head = m.hidden_size, 2.0 * m.hidden_size * m.vocab_size
    even = np.ceil(m.num_layers / pp) / m.num_layers * (sum(_layer_flops(ly, D, seq_len) for ly in m.layers) + head)
    return float(max(ranks) / even)
