"""train --search (parallel/train_search.py): the fastest layouts that fit, through the same train_step."""

import pytest

from tokenomy.answers.training import train


def test_search_finds_metas_layout_family_for_405b():
    # Llama 3 405B on 16,384 H100, 16M-token batches of 8K: Meta ran TP8 PP16 with an interleaved pipeline (Llama 3
    # paper Table 4); the search ranks that family first, every row fits and the rows come fastest first.
    rows = train(model="llama-3.1-405b", hardware="h100-sxm", chips=16384, seq_len=8192, global_batch=[2048],
                 search=True).rows()
    best = rows[0]
    assert (best["tp"], best["pp"], best["dp"]) == (8, 16, 128) and best["schedule"].startswith("interleaved")
    assert all(r["fits"] for r in rows)
    assert [r["step_s"] for r in rows] == sorted(r["step_s"] for r in rows)
    one = train(model="llama-3.1-405b", hardware="h100-sxm", chips=16384, seq_len=8192, global_batch=[2048], tp=8,
                pp=16, schedule="interleaved", virtual_stages=8, recompute=best["recompute"],
                flash_attention=True).rows()[0]
    assert best["step_s"] == pytest.approx(one["step_s"])  # the same step train times for that layout


def test_search_puts_dualpipe_first_for_deepseek_v3_on_h800():
    rows = train(model="deepseek-v3", hardware="h800", chips=2048, seq_len=4096, global_batch=[15360],
                 compute_dtype="fp8", activation_dtype="fp8", optimizer_dtype="bf16", search=True).rows()
    assert rows[0]["schedule"] == "dualpipe" and rows[0]["ep"] >= 8


def test_search_needs_chips_and_one_batch():
    with pytest.raises(ValueError, match="chips"):
        train(model="llama-3.1-8b", hardware="h100-sxm", seq_len=4096, global_batch=[64], search=True)
    with pytest.raises(ValueError, match="global_batch"):
        train(model="llama-3.1-8b", hardware="h100-sxm", chips=8, seq_len=4096, global_batch=[64, 128], search=True)
