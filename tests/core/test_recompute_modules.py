"""Megatron-Core's recompute_modules (core/recompute_modules.py): each module takes its own tensors out of the stored
activations and adds its own GEMMs to the recompute, on the catalog's real configs (DeepSeek-V3, Llama 3.1 8B)."""

import pytest

from tokenomy.catalog import loader
from tokenomy.core.memory import Stored, layer_bytes_per_token
from tokenomy.core.train_flops import recompute_mm_flops, redoes_attention
from tokenomy.core.train_plan import TrainPlan

E = 2.0  # bf16 activations


def per_token(layer, D, *modules, strategy="selective"):
    return float(layer_bytes_per_token(layer, D, 4096, Stored(act_bytes=E, flash=True, strategy=strategy,
                                                              modules=frozenset(modules))))


def test_mla_up_proj_drops_exactly_the_up_projected_q_k_v():
    m = loader.model("deepseek-v3")
    ly, a = m.layers[-1], m.layers[-1].attention
    # q and k at head_dim (nope + rope) each, v at v_head_dim, for every head: 128 x (2 x 192 + 128) elements
    qkv = a.num_heads * (2 * a.head_dim + a.v_head_dim)
    assert per_token(ly, m.hidden_size) - per_token(ly, m.hidden_size, "mla_up_proj") == pytest.approx(E * qkv)


def test_layernorm_drops_the_norm_outputs_and_moe_drops_the_whole_moe_inside():
    m = loader.model("deepseek-v3")
    ly, D = m.layers[-1], m.hidden_size
    assert per_token(ly, D) - per_token(ly, D, "layernorm") == pytest.approx(ly.norms * E * D)
    full, act, shared, moe = (per_token(ly, D, x) for x in ("core_attn", "moe_act", "shared_experts", "moe"))
    # moe_act keeps each routed expert's gate/up output (2F) and drops its activation output (F): k·F elements
    mlp = ly.mlp
    assert full - act == pytest.approx(E * mlp.experts_per_tok * mlp.expert_intermediate_size)
    assert moe < shared < full and moe < act


def test_mlp_recomputes_the_dense_mlp_gemms():
    m = loader.model("llama-3.1-8b")
    D, F, L = m.hidden_size, m.layers[0].mlp.intermediate_size, m.num_layers
    # gate, up and down projections: 3 x 2·D·F FLOPs per token and layer
    assert recompute_mm_flops(m, "selective", ("mlp",)) == pytest.approx(L * 3 * 2 * D * F)
    assert recompute_mm_flops(m, "selective", ()) == 0.0  # the default list, core_attn: no weight GEMM again
    assert redoes_attention("selective", ()) and not redoes_attention("selective", ("mlp",))


def test_a_list_outside_selective_or_an_unknown_module_is_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"^recompute_modules: .*selective"):
        TrainPlan(recompute="full", recompute_modules=("mlp",))
    with pytest.raises(ValueError, match=r"^recompute_modules: 'attn' is not a module"):
        TrainPlan(recompute="selective", recompute_modules=("attn",))
