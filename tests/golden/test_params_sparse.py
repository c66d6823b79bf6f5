"""Indexed sparse and compressed attention (arch/families/sparse.py): DeepSeek-R1 (V3), DeepSeek-V3.2 and GLM-5 (DSA),
DeepSeek-V4-Pro/-Flash (CSA + HCA + sliding window, mHC).

Golden counts: tests/golden/model_cards.toml (each card's source and caveats there). KV bytes: a closed form written
here from the config fields, not through the library's formulas.
"""

import copy
import json
import tomllib
from pathlib import Path

import pytest

import tokenomy.catalog as catalog
from tokenomy.arch.hf import ConfigError, from_config
from tokenomy.arch.params import count_params, kv_bytes_at_context, kv_bytes_per_token
from tokenomy.catalog.loader import model

CARDS = tomllib.loads((Path(__file__).parent / "model_cards.toml").read_text())
MODELS = Path(catalog.__file__).parent / "models"
B = 2  # bf16 cache bytes per element
CONTEXTS = (1024, 128 * 1024, 1024 * 1024)


def _cfg(stem):
    return json.loads((MODELS / f"{stem}.json").read_text())


def _no_embed(name):
    """Active parameters without the input embedding (a gather: no FLOPs), the gpt-oss / DeepSeek convention."""
    p = count_params(model(name))
    return p.active - p.embed


# ---- parameter counts vs the cards -------------------------------------------------------------------------

def test_deepseek_r1_counts():
    # Card: 671B / 37B, main model without the 14B MTP module (DeepSeek-V3 architecture). "37B" has 2 significant
    # figures: 37.55B with embeddings (+1.5%), 36.63B without the input embedding (-1.01%, as V3 in test_params.py);
    # the second rounds to 37B: compare the rounding, and the 1% band to within its last digit.
    card, p = CARDS["deepseek-r1"], count_params(model("deepseek-r1"))
    assert p.total == pytest.approx(card["total_params"], rel=0.01)
    assert round(_no_embed("deepseek-r1") / 1e9) == round(card["active_params"] / 1e9)
    assert _no_embed("deepseek-r1") == pytest.approx(card["active_params"], rel=0.0102)
    assert model("deepseek-r1").mtp_layers == 1  # num_nextn_predict_layers: the MTP draft, outside the 671B


def test_deepseek_v32_counts():
    # Card: 671B / 37B inherited from DeepSeek-V3 (its caveat: "HF's 685B counts MTP and the lightning indexer");
    # we exclude MTP and include the indexer (61 x 13.96M = 0.85B, +0.13%). Active: like V3, without the input
    # embedding; the indexer adds 0.85B to V3's 36.63B -> 37.48B (+1.3% of a 2-significant-figure "37B"), so compare
    # like with like: without the indexer, V3's figure (-1.01%, see test_deepseek_r1_counts), and the rounding.
    m, card = model("deepseek-v3.2"), CARDS["deepseek-v3.2"]
    p = count_params(m)
    D, r, n, d = 7168, 1536, 64, 128  # hidden_size, q_lora_rank, index_n_heads, index_head_dim
    indexer = 61 * (r * n * d + D * d + 2 * d + D * n)  # wq_b, wk, k_norm (LayerNorm w+b), weights_proj
    assert p.total == pytest.approx(card["total_params"], rel=0.01)
    assert p.total - count_params(model("deepseek-v3")).total == indexer
    assert _no_embed("deepseek-v3.2") - indexer == _no_embed("deepseek-v3")
    assert _no_embed("deepseek-v3.2") - indexer == pytest.approx(card["active_params"], rel=0.0102)
    assert round(_no_embed("deepseek-v3.2") / 1e9) == 37
    assert m.mtp_layers == 1


def test_glm5_counts():
    # Card: 744B / 40B; the MTP layer (num_nextn_predict_layers 1) is excluded: 743.9B (-0.01%).
    # Active: Zhipu counts active parameters without the embedding and the LM head: the same rule reproduces
    # GLM-4.5's "32B active" from its config (89 MoE x 0.348B + 3 dense x 0.33B = 32.0B); here 39.9B (-0.3%).
    m, card = model("glm-5"), CARDS["glm-5"]
    p = count_params(m)
    assert p.total == pytest.approx(card["total_params"], rel=0.01)
    assert p.active - p.embed - p.head == pytest.approx(card["active_params"], rel=0.01)
    assert m.mtp_layers == 1


def test_deepseek_v4_flash_counts():
    # Card: 284B / 13B. Total without the MTP block: 284.3B (+0.1%; with it ~291B, +2.5%: the card excludes MTP).
    # Active without the input embedding 13.27B: "13B" has 2 significant figures (+2.1%), so compare its rounding.
    m, card = model("deepseek-v4-flash"), CARDS["deepseek-v4-flash"]
    p = count_params(m)
    assert p.total == pytest.approx(card["total_params"], rel=0.01)
    assert round(_no_embed("deepseek-v4-flash") / 1e9) == round(card["active_params"] / 1e9)
    assert m.mtp_layers == 1


def test_deepseek_v4_pro_counts():
    # Card: 1.6T / 49B. Active without the input embedding 48.85B (-0.3%). Total without the MTP block (the
    # convention Flash's 284B pins down): 1.573T, which the card's 2 significant figures round to 1.6T; the 1%
    # band (1.584-1.616T) is narrower than that rounding, so compare the rounding. (With MTP: ~1.599T.)
    m, card = model("deepseek-v4-pro"), CARDS["deepseek-v4-pro"]
    p = count_params(m)
    assert round(p.total / 1e11) == round(card["total_params"] / 1e11) == 16
    assert p.total == pytest.approx(card["total_params"], rel=0.02)
    assert _no_embed("deepseek-v4-pro") == pytest.approx(card["active_params"], rel=0.01)


def test_deepseek_v4_pro_attention_params_by_hand():
    # One CSA layer (compress_ratio 4) of V4-Pro from the reference code's modules, written out.
    D, H, d, rq, ro, g, n, dI, hc = 7168, 128, 512, 1536, 1024, 16, 64, 128, 4
    core = H + D * rq + rq + rq * H * d + D * d + d + H * d * ro + g * ro * D  # sinks, q, kv, grouped low-rank o
    compressor = 4 * 2 * d + 2 * D * 2 * d + d  # ape, wkv, wgate (overlapping: 2 streams), norm
    indexer = rq * n * dI + D * n + (4 * 2 * dI + 2 * D * 2 * dI + dI)  # wq_b, weights_proj, its compressor
    mhc = 2 * (24 * 4 * D + 24 + 3)  # two mixers: fn (2+hc)hc x hc·D, base, scale
    a = model("deepseek-v4-pro").layers[2].attention
    assert a.compress_ratio == 4
    assert a.params(D) == core + compressor + indexer + mhc
    assert count_params(model("deepseek-v4-pro")).extra == hc * hc * D + hc + 1  # the head's mixer


# ---- attention kinds as the configs say -----------------------------------------------------------------------

@pytest.mark.parametrize("name,heads,topk", [("deepseek-v3.2", 64, 2048), ("glm-5", 32, 2048)])
def test_dsa_kinds(name, heads, topk):
    for layer in model(name).layers:
        a = layer.attention
        assert (a.kind, a.variant, a.index_topk, a.index_n_heads, a.index_head_dim) == ("mla", "dsa", topk, heads, 128)
        assert a.window is None and a.compress_ratio is None


@pytest.mark.parametrize("name,stem", [("deepseek-v4-pro", "deepseek-ai--DeepSeek-V4-Pro"),
                                       ("deepseek-v4-flash", "deepseek-ai--DeepSeek-V4-Flash")])
def test_v4_kinds(name, stem):
    cfg, m = _cfg(stem), model(name)
    ratios = cfg["compress_ratios"]
    assert len(ratios) == cfg["num_hidden_layers"] + cfg["num_nextn_predict_layers"]  # last entry: the MTP block
    assert m.num_layers == cfg["num_hidden_layers"]
    for r, layer in zip(ratios, m.layers):
        a = layer.attention
        assert a.window == cfg["sliding_window"] == 128
        assert a.compress_ratio == (r or None)
        assert a.variant == {0: "swa", 4: "csa", 128: "hca"}[r]
        assert a.index_topk == (cfg["index_topk"] if r == 4 else None)
        assert a.kv_elements_per_token() == cfg["head_dim"]  # one shared key-value vector
    assert [layer.mlp.router_bias for layer in m.layers[:4]] == [False, False, False, True]  # 3 hash-routed layers
    q = m.quantization
    assert (q.dense, q.expert, q.embed) == ("fp8", "mxfp4", "bf16")


# ---- KV cache: closed forms from the config fields --------------------------------------------------------------

def _dsa_kv(cfg, C):
    """MLA latent (kv_lora_rank + qk_rope_head_dim) + one index key (index_head_dim) per token per layer."""
    return cfg["num_hidden_layers"] * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"] + cfg["index_head_dim"]) * C * B


def _v4_kv(cfg, C):
    """Per layer: head_dim x (min(C, window) raw entries + C // r compressed); CSA (r = 4) also C // 4 index keys."""
    w, d, dI = cfg["sliding_window"], cfg["head_dim"], cfg["index_head_dim"]
    total = 0
    for r in cfg["compress_ratios"][: cfg["num_hidden_layers"]]:
        total += d * (min(C, w) + (C // r if r else 0)) + (dI * (C // 4) if r == 4 else 0)
    return total * B


@pytest.mark.parametrize("name,stem", [("deepseek-v3.2", "deepseek-ai--DeepSeek-V3.2"), ("glm-5", "zai-org--GLM-5")])
@pytest.mark.parametrize("C", CONTEXTS)
def test_dsa_kv_bytes(name, stem, C):
    cfg, m = _cfg(stem), model(name)
    # V3.2: 61 x (512 + 64) latent + 61 x 128 index-key elements per token; GLM-5: 78 x (512 + 64 + 128).
    assert kv_bytes_at_context(m, C) == _dsa_kv(cfg, C)
    # kv_bytes_per_token counts the attention cache only (kv_elements), not the indexer's keys.
    assert kv_bytes_per_token(m) == cfg["num_hidden_layers"] * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * B


def test_r1_kv_bytes():
    assert kv_bytes_per_token(model("deepseek-r1")) == 61 * 576 * B == 70272
    assert kv_bytes_at_context(model("deepseek-r1"), 131072) == 61 * 576 * B * 131072


V4 = [("deepseek-v4-pro", "deepseek-ai--DeepSeek-V4-Pro"), ("deepseek-v4-flash", "deepseek-ai--DeepSeek-V4-Flash")]


@pytest.mark.parametrize("name,stem", V4)
def test_v4_kv_bytes_per_token(name, stem):
    cfg = _cfg(stem)  # below the 128-token window every layer keeps each token's 512-wide entry
    assert kv_bytes_per_token(model(name)) == cfg["num_hidden_layers"] * cfg["head_dim"] * B


@pytest.mark.parametrize("name,stem", V4)
@pytest.mark.parametrize("C", CONTEXTS)
def test_v4_kv_bytes_at_context(name, stem, C):
    assert kv_bytes_at_context(model(name), C) == _v4_kv(_cfg(stem), C)


def test_v4_pro_kv_a_tenth_of_v32_at_1m():
    # DeepSeek-V4 card: "in the 1M-token context setting, DeepSeek-V4-Pro requires only ... 10% of KV cache compared
    # with DeepSeek-V3.2" (same cache dtype for both here).
    ratio = kv_bytes_at_context(model("deepseek-v4-pro"), 2**20) / kv_bytes_at_context(model("deepseek-v3.2"), 2**20)
    assert ratio == pytest.approx(0.10, abs=0.02)


# ---- malformed configs name the field --------------------------------------------------------------------------

def _bad(stem, field, **changes):
    cfg = copy.deepcopy(_cfg(stem))
    for k, v in changes.items():
        if v is None:
            del cfg[k]
        else:
            cfg[k] = v
    with pytest.raises(ConfigError, match=field):
        from_config(cfg, stem)


def test_v4_unknown_compress_ratio():
    ratios = _cfg("deepseek-ai--DeepSeek-V4-Pro")["compress_ratios"]
    _bad("deepseek-ai--DeepSeek-V4-Pro", r"compress_ratios\[5\]", compress_ratios=ratios[:5] + [16] + ratios[6:])
    _bad("deepseek-ai--DeepSeek-V4-Pro", r"compress_ratios\[0\]", compress_ratios=["128"] + ratios[1:])


def test_v4_malformed_fields():
    stem = "deepseek-ai--DeepSeek-V4-Flash"
    _bad(stem, "'compress_ratios'", compress_ratios=_cfg(stem)["compress_ratios"][:-1])  # MTP entry missing
    _bad(stem, "'compress_ratios'", compress_ratios=None)
    _bad(stem, "'expert_dtype'", expert_dtype="int3")
    _bad(stem, "'num_key_value_heads'", num_key_value_heads=8)
    _bad(stem, "'o_groups'", o_groups=7)
    _bad(stem, "'hc_mult'", hc_mult=None)


def test_dsa_malformed_fields():
    _bad("deepseek-ai--DeepSeek-V3.2", "'index_topk'", index_topk=None)
    _bad("zai-org--GLM-5", "'indexer_types'", indexer_types=["full", "sparse"] * 39)
    _bad("zai-org--GLM-5", "'index_topk_pattern'", index_topk_pattern="FX" * 39)


def test_glm_shared_indexer_layers():
    # GLM-5.x configs may share one layer's top-k with the next ("shared": no indexer weights or index keys there).
    cfg = _cfg("zai-org--GLM-5")
    base = from_config(cfg, "glm-5")
    shared = from_config({**cfg, "index_topk_pattern": "FS" * 39}, "glm-5-shared")
    per_layer = 2048 * 32 * 128 + 6144 * 128 + 2 * 128 + 6144 * 32
    assert count_params(base).total - count_params(shared).total == 39 * per_layer
    assert [la.attention.variant for la in shared.layers[:2]] == ["dsa", "dsa_shared"]
    assert all(la.attention.index_topk == 2048 for la in shared.layers)
