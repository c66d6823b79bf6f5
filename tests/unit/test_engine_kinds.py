"""The engine on today's attention kinds, against closed forms written from the configs by hand (issue 16).

Each expected value is computed here from config.json fields, not by the code under test."""

import json
from pathlib import Path

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout

MODELS = Path(loader.__file__).parent / "models"


def cfg(stem: str) -> dict:
    d = json.loads((MODELS / f"{stem}.json").read_text())
    return d.get("text_config") or d


def terms(name: str, C, S=1.0, kv_dtype="bf16"):
    d = Deployment(loader.model(name), loader.hardware("gb200-nvl72"), Layout(tp=8), kv_dtype=kv_dtype)
    return engine.cache_terms(d.shape.coeffs, np.asarray(float(C)), np.asarray(float(S)), d.precision)


@pytest.mark.parametrize("C", [4096.0, 131072.0, 1048576.0])
def test_dsa_attends_top_k_and_indexes_everything(C):
    # DeepSeek-V3.2: 61 MLA layers; absorbed decode attention 2·H·(2·kv_lora + rope) FLOPs per attended entry over
    # min(C, index_topk) entries; the indexer scores all C entries at 2·index_n_heads·index_head_dim FLOPs each and
    # reads C index keys of index_head_dim elements; the core reads min(C, topk) latents of kv_lora + rope.
    c = cfg("deepseek-ai--DeepSeek-V3.2")
    L, H, r, rope, k = c["num_hidden_layers"], c["num_attention_heads"], c["kv_lora_rank"], c["qk_rope_head_dim"], \
        c["index_topk"]
    flops = L * (2 * H * (2 * r + rope) * min(C, k) + 2 * c["index_n_heads"] * c["index_head_dim"] * C)
    read = L * ((r + rope) * min(C, k) + c["index_head_dim"] * C) * 2.0  # bf16
    t = terms("deepseek-v3.2", C)
    assert float(t.flops_per_token) == pytest.approx(flops, rel=1e-12)
    assert float(t.read_per_seq) == pytest.approx(read, rel=1e-12)
    dense = terms("deepseek-r1", C)  # the same model without DSA attends everything
    assert float(dense.flops_per_token) == pytest.approx(L * 2 * H * (2 * r + rope) * C, rel=1e-12)


@pytest.mark.parametrize("C", [1024.0, 131072.0, 1048576.0])
def test_v4_caches_a_window_plus_compressed_entries(C):
    # DeepSeek-V4-Pro: every layer keeps the last sliding_window raw entries of head_dim elements plus C/r compressed
    # ones (r from compress_ratios, the last entry being the MTP layer's); r = 4 layers (CSA) also keep an index key
    # per compressed entry and attend top-k of them.
    c = cfg("deepseek-ai--DeepSeek-V4-Pro")
    L, w, d = c["num_hidden_layers"], c["sliding_window"], c["head_dim"]
    ratios = c["compress_ratios"][:L]
    entries = sum(min(C, w) + (C / r if r else 0.0) for r in ratios)
    index = sum(C / r for r in ratios if r == 4) * c["index_head_dim"]
    t = terms("deepseek-v4-pro", C)
    assert float(t.cached_per_seq) == pytest.approx((entries * d + index) * 2.0, rel=1e-12)
    attended = sum(min(C, w) + (min(C / r, c["index_topk"]) if r == 4 else (C / r if r else 0.0)) for r in ratios)
    assert float(t.read_per_seq) == pytest.approx((attended * d + index) * 2.0, rel=1e-9)


def test_linear_state_is_read_and_written_each_step_and_does_not_grow():
    # Qwen3.5-397B-A17B: 45 Gated DeltaNet layers keep a fixed fp32 state; 15 full-attention layers cache 2·K·d.
    c = cfg("Qwen--Qwen3.5-397B-A17B")
    full = sum(t == "full_attention" for t in c["layer_types"])
    kv = full * 2 * c["num_key_value_heads"] * c["head_dim"] * 2.0
    short, long = terms("qwen3.5-397b-a17b", 1024.0), terms("qwen3.5-397b-a17b", 1048576.0)
    state = float(short.written_per_seq)
    assert state > 0 and float(long.written_per_seq) == state  # the state does not grow with context
    assert float(long.cached_per_seq - short.cached_per_seq) == pytest.approx(kv * (1048576 - 1024), rel=1e-12)
    assert float(short.read_per_seq) == pytest.approx(kv * 1024 + state, rel=1e-12)


@pytest.mark.parametrize("C", [5000.0, 20000.0, 131072.0])
def test_llama4_chunked_layers_attend_their_own_chunk(C):
    # Llama-4 Scout: 3 of 4 layers attend only within their attention_chunk_size chunk (cache: min(C, chunk)),
    # every 4th layer attends everything.
    c = cfg("meta-llama--Llama-4-Scout-17B-16E-Instruct")
    L, chunk = c["num_hidden_layers"], c["attention_chunk_size"]
    per_entry = 2 * c["num_key_value_heads"] * c["head_dim"] * 2.0
    n_global = L // 4
    cached = ((L - n_global) * min(C, chunk) + n_global * C) * per_entry
    read = ((L - n_global) * (((C - 1) % chunk) + 1) + n_global * C) * per_entry
    t = terms("llama-4-scout", C)
    assert float(t.cached_per_seq) == pytest.approx(cached, rel=1e-12)
    assert float(t.read_per_seq) == pytest.approx(read, rel=1e-12)


def test_decode_reads_the_state_and_the_new_kinds_through_the_whole_engine():
    # End to end: at 1M context V4-Pro's KV per chip is ~10% of V3.2's (its card), and a step's KV time follows it.
    def run(name):
        m = loader.model(name)
        E = next(layer.mlp.num_experts for layer in m.layers if layer.mlp.kind == "moe")
        d = Deployment(m, loader.hardware("gb200-nvl72"), Layout(ep=72, redundant_experts=-E % 72))  # fill the slots
        r = d.run(1.0, 1048576.0)
        assert int(r.reason) == 0, engine.why_not(r, d.layout, 0)
        return r
    v4, v32 = run("deepseek-v4-pro"), run("deepseek-v3.2")
    assert 0.05 < float(v4.kv_bytes_per_chip / v32.kv_bytes_per_chip) < 0.2
    assert float(v4.kv_s) < float(v32.kv_s)


def test_hyper_connections_widen_the_residual_traffic():
    # DeepSeek-V4 hc_mult = 4: each layer's two sublayers read and write 4·D-wide residual streams, (4 - 1)·D more
    # elements each way than a plain residual: 61 layers x 2 x 2 x 3 x 7168 extra activation elements per token.
    from dataclasses import replace

    from tokenomy.core.coeffs import coefficients

    c = cfg("deepseek-ai--DeepSeek-V4-Pro")
    m = loader.model("deepseek-v4-pro")
    assert m.residual_streams == c["hc_mult"] == 4
    plain = coefficients(replace(m, residual_streams=1)).act_elems_per_token
    assert coefficients(m).act_elems_per_token - plain == c["num_hidden_layers"] * 2 * 2 * 3 * c["hidden_size"]
