"""FLOPs per trained token, by term, from the one pass engine's forward (core/training.py's docstring has the
formulas: model = 6·N_active + 3·attention_forward(convention), hardware = 3·(2·N_active + causal attention) +
recompute; Kaplan et al. 2020 arXiv 2001.08361 §2.1, PaLM arXiv 2204.02311 App. B; what recompute repeats: Korthikanti
et al. 2022 arXiv 2205.05198 §5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.core.memory import check_strategy
from tokenomy.core.op_sac import op_recompute_flops
from tokenomy.core.recompute_modules import effective, module_flops, up_projection_layer_flops
from tokenomy.refusal import choice

ATTENTION_CONVENTIONS = ("full", "causal", "none")


def check_attention(convention: str) -> str:
    return choice("attention", convention, ATTENTION_CONVENTIONS, "an attention convention")


@dataclass(frozen=True)
class TrainFlops:
    """FLOPs per trained token, by term. ``model`` is the MFU numerator, ``hardware`` what the chips execute."""

    matmul: object  # 6·N_active
    attention: object  # 3·attention forward under the convention
    recompute: object
    model: object
    hardware: object  # 3·(2·N_active + causal attention) + recompute
    n_active: object  # N_active (matmul weights per token)
    convention: str
    attention_executed: object = 0.0  # 3·causal attention forward: what the kernels run


def attention_positions(seq_len, window, convention="causal"):
    """Mean attended positions per query: full min(s, w); causal (s+1)/2, or w - w(w-1)/(2s) under a window w."""
    check_attention(convention)
    s, w = np.asarray(seq_len, dtype=float), np.asarray(window, dtype=float)
    if convention == "none":
        return 0.0 * s
    if convention == "full":
        return np.minimum(s, w)
    w = np.minimum(w, s)  # a window at least as long as the sequence is no window
    return w - w * (w - 1) / (2 * s)


def up_projection_flops(m: ModelArch) -> float:
    """FLOPs per token of MLA's up-projections (q from its latent, k_nope and v from the KV latent), all layers:
    what recompute "modules" repeats besides norms and SwiGLU (DeepSeek-V3 report §3.2.3); 0 without MLA."""
    return sum(up_projection_layer_flops(ly.attention) for ly in m.layers)


def recompute_mm_flops(m: ModelArch, strategy: str, modules=()) -> float:
    """FLOPs per token of the weight GEMMs a recompute strategy repeats beside the attention: MLA's up-projections
    under "modules", the every-second mms of torchtitan's op policy under "op" (core/op_sac.py), Megatron's
    ``modules`` under "selective" (core/recompute_modules.py), else 0."""
    if strategy == "op":
        return sum(op_recompute_flops(ly, m.hidden_size) for ly in m.layers)
    if strategy == "selective":
        return module_flops(m, effective(strategy, modules))
    return up_projection_flops(m) if strategy == "modules" else 0.0


def redoes_attention(strategy: str, modules=()) -> bool:
    """Whether the core attention runs again in the backward: selective with core_attn (its default), modules, full
    and reversible; not none, not op (torchtitan saves the SDPA output), not a module list without core_attn."""
    if strategy == "selective":
        return "core_attn" in effective(strategy, modules)
    return strategy not in ("none", "op")


def recompute_extra(strategy: str, modules, att, up, whole):
    """The forward work the backward runs again, in any unit: the whole forward ``whole`` under full and reversible
    recompute, else the core attention ``att`` where redoes_attention says so plus the repeated weight GEMMs ``up``
    (recompute_mm_flops: 0 under none)."""
    if strategy in ("full", "reversible"):
        return whole
    return att * redoes_attention(strategy, modules) + up


def per_token_flops(w: engine.Work, w_prev: engine.Work, seq_len, attention: str, strategy: str,
                    up_flops: float = 0.0, modules=()) -> TrainFlops:
    """Per-token training FLOPs from the engine's forward pass ``w`` (s tokens) and ``w_prev`` (s - 1 tokens);
    ``up_flops`` the weight GEMMs the strategy repeats (recompute_mm_flops); ``modules`` Megatron's list under
    "selective" (without core_attn the attention is not repeated)."""
    check_attention(attention)
    check_strategy(strategy)
    s = np.asarray(seq_len, dtype=float)
    tokens = np.asarray(w.batch, dtype=float) * s
    att = np.asarray(w.attention_flops, dtype=float) / tokens  # causal attention forward per token
    n_active = (np.asarray(w.flops, dtype=float) / tokens - att) / 2
    last = (np.asarray(w.attention_flops) - np.asarray(w_prev.attention_flops)) / np.asarray(w.batch, dtype=float)
    conv = {"causal": att, "full": last, "none": 0.0 * att}[attention]
    matmul = 6 * n_active
    # op: the attention is saved (its SDPA output), only the every-second mms run again (core/op_sac.py)
    extra = recompute_extra(strategy, modules, att, up_flops, 2 * n_active + att) + 0.0 * att
    return TrainFlops(matmul, 3 * conv, extra, matmul + 3 * conv, matmul + 3 * att + extra, n_active, attention,
                      3 * att)


def train_flops_per_token(dep: Deployment, seq_len, attention="causal", strategy="none", modules=()) -> TrainFlops:
    """FLOPs per token of training on sequences of ``seq_len`` (module docstring), from dep's model via the engine."""
    d = dep.with_(layout=Layout())
    s = np.asarray(seq_len, dtype=float)
    return per_token_flops(d.work(1, s, s), d.work(1, s - 1, s - 1), s, attention, strategy,
                           recompute_mm_flops(d.model, strategy, modules), modules)

