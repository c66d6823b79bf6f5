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


DEEPSEEK_V3 = dict(model="deepseek-v3", hardware="h800", chips=2048, seq_len=4096, global_batch=[15360],
                   compute_dtype="fp8", activation_dtype="fp8", optimizer_dtype="bf16")


def test_search_hides_deepseek_v3s_all_to_alls_on_h800():
    # every layout at the top hides its EP all-to-alls (DualPipe, or Megatron's combined 1F1B at ep_overlap 1), and
    # the best is at least as fast as DeepSeek's own (PP16 DualPipe EP64), which is one of the candidates
    rows = train(**DEEPSEEK_V3, search=True).rows()
    assert all(r["ep"] >= 8 and r["ep_overlap"] == 1.0 for r in rows)
    own = train(**DEEPSEEK_V3, pp=16, ep=64, schedule="dualpipe", recompute="modules", flash_attention=True).rows()[0]
    assert own["fits"] and rows[0]["step_s"] <= own["step_s"]


def test_candidates_try_dualpipe_and_ep_overlap_where_the_model_is_moe():
    from tokenomy.catalog.loader import hardware, model
    from tokenomy.parallel.train_search import TrainSearch, candidates

    q = TrainSearch(chips=256, global_batch=1024, seq_len=4096)
    moe = candidates(model("deepseek-v3"), hardware("h800"), q)
    overlapped = [p for p in moe if p.ep_overlap == 1.0]
    assert any(p.schedule == "dualpipe" for p in moe) and overlapped
    # Megatron's combined 1F1B: expert parallel, and virtual stages when pipelined; DualPipe hides them itself
    assert all(p.ep > 1 and (p.pp == 1 or p.schedule == "interleaved") for p in overlapped)
    assert {p.schedule for p in overlapped} == {"1f1b", "interleaved"}
    dense = candidates(model("llama-3.1-70b"), hardware("h100-sxm"), q)
    assert dense and all(p.ep_overlap == 0.0 and p.ep == 1 for p in dense)
    # the zero-bubble schedules (core/schedules.py) on every pipelined layout, never without a pipeline
    zb = [p for p in dense if p.schedule.startswith("zb-")]
    assert {p.schedule for p in zb} == {"zb-h1", "zb-h2", "zb-v"} and all(p.pp > 1 for p in zb)


def test_search_takes_zb_v_where_a_pipeline_has_micro_batches_to_fill_it():
    # Llama 3.1 70B on 512 H100, 256 sequences of 8K: with m >= 2p micro-batches a pipeline, ZB-V's bubble (as
    # ZB-H2's, (p-1)(T_F + T_B - 2T_W)) is below interleaving's (p-1)/(v·m + p-1) at 1F1B's activation memory
    # (Qi et al. 2024 §6 recommend it), so the fastest layout runs it and beats the best interleaved one
    rows = train(model="llama-3.1-70b", hardware="h100-sxm", chips=512, seq_len=8192, global_batch=[256],
                 search=True).rows()
    inter = next(r for r in rows if r["schedule"].startswith("interleaved"))
    assert rows[0]["schedule"] == "zb-v" and rows[0]["pp"] > 1
    assert rows[0]["bubble_fraction"] < inter["bubble_fraction"] and rows[0]["step_s"] < inter["step_s"]


def test_search_needs_chips_and_one_batch():
    with pytest.raises(ValueError, match="chips"):
        train(model="llama-3.1-8b", hardware="h100-sxm", seq_len=4096, global_batch=[64], search=True)
    with pytest.raises(ValueError, match="global_batch"):
        train(model="llama-3.1-8b", hardware="h100-sxm", chips=8, seq_len=4096, global_batch=[64, 128], search=True)
