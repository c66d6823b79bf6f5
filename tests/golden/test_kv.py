"""KV-cache bytes per token, exact, for each attention kind (closed forms from each architecture's paper)."""

import pytest

from tokenomy.arch.params import kv_bytes_at_context, kv_bytes_per_token
from tokenomy.catalog.loader import model


def test_gqa_llama_70b():
    # 2 (K,V) x 80 layers x 8 KV heads x 128 head_dim x 2 bytes = 327,680 (issue 2; GQA, arXiv 2305.13245).
    assert kv_bytes_per_token(model("llama-3.1-70b")) == 2 * 80 * 8 * 128 * 2 == 327_680


def test_mla_deepseek_v3():
    # MLA caches the latent (512) and the rope key (64): 61 x 576 x 2 = 70,272 (DeepSeek-V2, arXiv 2405.04434).
    assert kv_bytes_per_token(model("deepseek-v3")) == 61 * 576 * 2 == 70_272
    assert kv_bytes_per_token(model("deepseek-v3"), "fp8") == 61 * 576


def test_mqa_palm_540b():
    # Multiquery, d_head 256: 2 x 118 x 1 x 256 x 2 = 120,832 (lecture.md §3.4; Pope et al. 2022).
    assert kv_bytes_per_token(model("palm-540b")) == 120_832


def test_sliding_window_caps_cached_length():
    # gpt-oss-120b: 18 full + 18 sliding (window 128) layers, 8 KV heads x 64 dims (arXiv 2508.10925).
    m = model("gpt-oss-120b")
    per_layer = 2 * 8 * 64 * 2
    C = 100_000
    assert kv_bytes_at_context(m, C) == 18 * per_layer * C + 18 * per_layer * 128
    assert kv_bytes_at_context(m, 64) == 36 * per_layer * 64


def test_gemma3_local_global():
    # Gemma 3 27B: 62 layers, every 6th global, others window 1024; 16 KV heads x 128 dims (arXiv 2503.19786).
    m = model("gemma-3-27b-it")
    per_layer = 2 * 16 * 128 * 2
    n_global = 62 // 6
    C = 131_072
    assert kv_bytes_at_context(m, C) == n_global * per_layer * C + (62 - n_global) * per_layer * 1024


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-32b", "mixtral-8x7b-v0.1", "kimi-k2-instruct"])
def test_kv_linear_in_context_without_windows(name):
    m = model(name)
    assert kv_bytes_at_context(m, 3000) == pytest.approx(3 * kv_bytes_at_context(m, 1000))
    assert kv_bytes_at_context(m, 1000) == pytest.approx(1000 * kv_bytes_per_token(m))
