"""Hybrid linear-attention / SSM models (arch/families/hybrid.py) against their published cards
(tests/golden/model_cards.toml, sources there) and against closed forms written here from the config fields.

Card conventions: every total is the language model without the vision tower and without the MTP module. Active
counts: Qwen (hf.co/Qwen/Qwen3.5-397B-A17B, hf.co/Qwen/Qwen3.6-35B-A3B) publish whole billions ("17B", "3B"),
embeddings and head included: our count rounds to theirs (1% is finer than their rounding). Kimi-K3
(hf.co/moonshotai/Kimi-K3, "104B activated") counts without the input embedding (a gather): within 1%. Nemotron-3-
Super ("12B active", the A12B name truncates; catalogs quoted in the toml say 12.7B): floor equals 12 and the
embedding-inclusive count is within 1% of 12.7B.
"""

import json
import math
import tomllib
from pathlib import Path

import pytest

import tokenomy.catalog as catalog_pkg
from tokenomy.arch.hf import ConfigError, from_config
from tokenomy.arch.params import count_params, kv_bytes_per_token, state_bytes_per_sequence
from tokenomy.catalog.loader import model

CARDS = tomllib.loads((Path(__file__).parent / "model_cards.toml").read_text())
MODELS = Path(catalog_pkg.__file__).parent / "models"


def _cfg(stem):
    return json.loads((MODELS / f"{stem}.json").read_text())


@pytest.mark.parametrize("name", ["qwen3.5-397b-a17b", "qwen3.6-35b-a3b", "kimi-k3", "nemotron-3-super"])
def test_total_within_1pct_of_card(name):
    total = count_params(model(name)).total
    assert total == pytest.approx(CARDS[name]["total_params"], rel=0.01)


@pytest.mark.parametrize("name", ["qwen3.5-397b-a17b", "qwen3.6-35b-a3b"])
def test_qwen_active_rounds_to_card(name):
    assert round(count_params(model(name)).active / 1e9) == CARDS[name]["active_params"] / 1e9


def test_kimi_k3_active_without_input_embedding_within_1pct():
    p = count_params(model("kimi-k3"))
    assert p.active - p.embed == pytest.approx(CARDS["kimi-k3"]["active_params"], rel=0.01)


def test_nemotron_active():
    card = CARDS["nemotron-3-super"]
    active = count_params(model("nemotron-3-super")).active
    assert math.floor(active / 1e9) == card["active_params"] / 1e9
    assert "12.7B" in card["active_params_text"]
    assert active == pytest.approx(12.7e9, rel=0.01)


def _kinds(m):
    return [layer.attention.variant or layer.attention.kind for layer in m.layers]


def test_layer_patterns_as_configs_say():
    for name, stem in [("qwen3.5-397b-a17b", "Qwen--Qwen3.5-397B-A17B"),
                       ("qwen3.6-35b-a3b", "nvidia--Qwen3.6-35B-A3B-NVFP4")]:
        t = _cfg(stem)["text_config"]["layer_types"]
        k = _kinds(model(name))
        assert k.count("gated_deltanet") == t.count("linear_attention")
        assert k.count("gated_attention") == t.count("full_attention")
    assert _kinds(model("qwen3.5-397b-a17b")).count("gated_deltanet") == 45  # card: 15 x (3 DeltaNet + 1 attention)
    la = _cfg("moonshotai--Kimi-K3")["text_config"]["linear_attn_config"]
    k = _kinds(model("kimi-k3"))
    assert (k.count("kda"), k.count("gated_mla")) == (len(la["kda_layers"]), len(la["full_attn_layers"])) == (69, 24)
    pat = _cfg("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")["hybrid_override_pattern"]
    m = model("nemotron-3-super")
    k = _kinds(m)
    assert (k.count("mamba2"), k.count("gqa")) == (pat.count("M"), pat.count("*")) == (40, 8)
    assert sum(layer.mlp.kind == "moe" for layer in m.layers) == pat.count("E") == 40


def test_state_and_kv_closed_forms():
    # Qwen3.5 Gated DeltaNet: Hv·dk·dv + (kernel-1)·(2·Hk·dk + Hv·dv) per layer, fp32 (mamba_ssm_dtype).
    t = _cfg("Qwen--Qwen3.5-397B-A17B")["text_config"]
    n_lin, n_full = t["layer_types"].count("linear_attention"), t["layer_types"].count("full_attention")
    Hk, Hv, dk, dv = (t[f"linear_{x}"] for x in ("num_key_heads", "num_value_heads", "key_head_dim", "value_head_dim"))
    conv = 2 * Hk * dk + Hv * dv
    m = model("qwen3.5-397b-a17b")
    assert state_bytes_per_sequence(m) == n_lin * (Hv * dk * dv + (t["linear_conv_kernel_dim"] - 1) * conv) * 4
    assert kv_bytes_per_token(m) == n_full * 2 * t["num_key_value_heads"] * t["head_dim"] * 2 == 30720
    # Kimi-K3 KDA: H·d·d + 3·(kernel-1)·H·d, fp32; MLA layers cache kv_lora_rank + qk_rope_head_dim.
    t = _cfg("moonshotai--Kimi-K3")["text_config"]
    la = t["linear_attn_config"]
    H, d, K = la["num_heads"], la["head_dim"], la["short_conv_kernel_size"]
    m = model("kimi-k3")
    assert state_bytes_per_sequence(m) == len(la["kda_layers"]) * (H * d * d + 3 * (K - 1) * H * d) * 4
    assert kv_bytes_per_token(m) == len(la["full_attn_layers"]) * (t["kv_lora_rank"] + t["qk_rope_head_dim"]) * 2
    # Nemotron-H Mamba-2: heads·head_dim·ssm_state + (kernel-1)·(heads·head_dim + 2·n_groups·ssm_state), fp32.
    c = _cfg("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    P, N = c["mamba_num_heads"] * c["mamba_head_dim"], c["ssm_state_size"]
    pat = c["hybrid_override_pattern"]
    m = model("nemotron-3-super")
    assert state_bytes_per_sequence(m) == pat.count("M") * (P * N + (c["conv_kernel"] - 1) * (P + 2 * c["n_groups"] * N)) * 4
    assert kv_bytes_per_token(m) == pat.count("*") * 2 * c["num_key_value_heads"] * c["head_dim"] * 2 == 8192


def test_mtp_and_quantization_from_config():
    assert model("qwen3.5-397b-a17b").mtp_layers == 1 and model("nemotron-3-super").mtp_layers == 1
    q = model("kimi-k3").quantization  # compressed-tensors mxfp4: routed experts only (attention, shared, head ignored)
    assert (q.dense, q.expert, q.embed) == ("bf16", "mxfp4", "bf16")
    q = model("qwen3.6-35b-a3b").quantization  # modelopt mixed: attention FP8, experts and lm_head NVFP4
    assert (q.dense, q.expert, q.embed) == ("fp8", "nvfp4", "nvfp4")  # e4m3 scale per 16: 0.5625 B/param


@pytest.mark.parametrize("stem,path,bad", [
    ("Qwen--Qwen3.5-397B-A17B", ("text_config", "layer_types", 3), "sliding_attention"),
    ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", ("hybrid_override_pattern",), "MEX*E"),
])
def test_unknown_layer_type_names_the_field(stem, path, bad):
    d = _cfg(stem)
    node = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = bad
    if stem.startswith("nvidia--NVIDIA"):
        d["num_hidden_layers"] = len(bad)
    with pytest.raises(ConfigError, match=path[1] if len(path) == 3 else path[0]):
        from_config(d, "bad")


def test_kimi_layer_lists_must_cover_every_layer():
    d = _cfg("moonshotai--Kimi-K3")
    d["text_config"]["linear_attn_config"]["kda_layers"] = d["text_config"]["linear_attn_config"]["kda_layers"][1:]
    with pytest.raises(ConfigError, match="kda_layers"):
        from_config(d, "bad")
