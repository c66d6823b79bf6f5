"""Speculative decoding with the model's own MTP module as the draft (DeepSeek-V3 report, arXiv 2412.19437 §2.2
and §5.4.3; Leviathan et al. 2023, arXiv 2211.17192, eq. 1)."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401  (registers the commands)
from tokenomy.answers import economics
from tokenomy.answers.economics import deployment_request, serving
from tokenomy.cli import app
from tokenomy.core import engine
from tokenomy.econ import speculative as es

CONFIG = Path(__file__).parents[2] / "src/tokenomy/catalog/models/deepseek-ai--DeepSeek-V3.json"
H200 = ("deepseek-v3", "hgx-h200-8")


@pytest.fixture(scope="module")
def h200():
    return serving(deployment_request(*H200, None, {}), [1, 64], [8192])


def test_mtp_weights_are_one_moe_layer_plus_projection_by_an_independent_count():
    # from the config, not through the adapter: MLA attention, 256 routed + 1 shared SwiGLU experts, router,
    # the block's two RMSNorms, the module's enorm + hnorm + final norm, and eh_proj (2D x D); embedding and head
    # shared (arXiv 2412.19437 §2.2)
    c = json.loads(CONFIG.read_text())
    D, H, r, kv, rope = (c[k] for k in ("hidden_size", "num_attention_heads", "q_lora_rank", "kv_lora_rank",
                                        "qk_rope_head_dim"))
    nope, dv, Fe, E = c["qk_nope_head_dim"], c["v_head_dim"], c["moe_intermediate_size"], c["n_routed_experts"]
    attn = D * r + r + r * H * (nope + rope) + D * (kv + rope) + kv + kv * H * (nope + dv) + H * dv * D
    mlp = (E + c["n_shared_experts"]) * 3 * D * Fe + D * E
    want = attn + mlp + 2 * D + 3 * D + 2 * D * D
    m = economics.model_of("deepseek-v3")
    assert m.mtp_layers == c["num_nextn_predict_layers"] == 1
    assert es.mtp_params(m) == want
    assert 11.5e9 < want < 11.7e9  # the card's 14B MTP weights include copies of the embedding and head (1.85B)


def test_mtp_weights_and_kv_count_in_the_memory_per_chip(h200):
    d = es.mtp_draft(h200)
    sp = es.speculate(h200, np.array([1.0, 64.0]), 8192, 1, 0.85, draft=d)
    plain = es.speculate(h200, np.array([1.0, 64.0]), 8192, 1, 0.85, 0.05)
    dt = d.run(np.array([1.0, 64.0]), 8192.0)
    # tp8: the fp8 module's weights over 8 chips, the shared head not counted again
    assert float(dt.weight_bytes_per_chip) == pytest.approx((es.mtp_params(h200.model) - 2 * 7168) / 8, rel=0.01)
    assert np.allclose(sp.memory_per_chip_bytes - plain.memory_per_chip_bytes,
                       dt.weight_bytes_per_chip + dt.kv_bytes_per_chip)


def test_speedup_at_batch_1_is_between_1_and_k_plus_1(h200):
    for k in (1, 2, 3):
        sp = es.speculate(h200, np.array([1.0]), 8192, k, 0.85, draft=es.mtp_draft(h200))
        assert sp.base_bound[0] != engine.BOUNDS.index("compute")  # memory or its collectives at batch 1
        assert 1.0 < float(sp.speedup[0]) < k + 1
        assert float(sp.draft_s[0]) == pytest.approx(k * float(sp.draft_step_s[0]))
        assert 0 < float(sp.draft_s[0]) < float(sp.verify_step_s[0])  # one layer of 61, plus the shared head


def _round_s(sv, k, B, **eff):
    """The MTP round on ``sv`` with its efficiency terms replaced by ``eff``."""
    sv = replace(sv, eff=sv.eff.with_(**eff))
    return es.speculate(sv, B, 8192, k, 0.85, draft=es.mtp_draft(sv)).round_s


@pytest.mark.parametrize("k", [1, 3])
def test_the_host_pays_once_a_round_and_each_draft_layer_its_kernel_floor(h200, k):
    # one host step per verify + k drafts: TensorRT-LLM captures "both the verification and draft stages ... in one
    # graph" (tech blog 2, DeepSeek R1 MTP Implementation and Optimization). Raising o_step by 5 ms lengthens the
    # round by 5 ms, not (k + 1) x 5 ms; o_seq likewise, once for the round's sequences; κ by 1 us per kernel: the
    # target's 3 dense MLA layers (2 norms + MLA 10 + MLP 3 = 15 kernels) and 58 MoE ones (2 + 10 + router/grouped
    # GEMMs 7 + shared expert 3 = 22), 1,321, + k passes of the one-block module (4 norms + 10 + 10 = 24)
    B = np.array([1.0, 64.0])
    assert int(h200.layout.pp) == 1 and len(h200.model.layers) == 61
    zero = dict(overhead_s=0.0, sequence_overhead_s=0.0, kernel_overhead_s=0.0)
    r0 = _round_s(h200, k, B, **zero)
    assert np.allclose(_round_s(h200, k, B, **(zero | {"overhead_s": 5e-3})) - r0, 5e-3, rtol=1e-9, atol=1e-12)
    host_seqs = np.asarray(h200.work(B, 8192.0, float(k + 1)).host_seqs, float)
    assert np.allclose(_round_s(h200, k, B, **(zero | {"sequence_overhead_s": 1e-4})) - r0, 1e-4 * host_seqs,
                       rtol=1e-9, atol=1e-12)
    assert np.allclose(_round_s(h200, k, B, **(zero | {"kernel_overhead_s": 1e-6})) - r0, 1e-6 * (3 * 15 + 58 * 22 + 24 * k),
                       rtol=1e-9, atol=1e-12)


def test_the_round_grows_by_k_draft_passes_of_kernels_alone(h200):
    # round = t_verify + k·t_draft, t_draft the module's GPU time (no o_step, no o_seq): from k = 1 to 3 the round
    # grows by the verify pass's two more tokens and two more draft passes, each a one-block pass far below the
    # 61-layer step
    B = np.array([1.0])
    one, three = (es.speculate(h200, B, 8192, k, 0.85, draft=es.mtp_draft(h200)) for k in (1, 3))
    draft = float(one.draft_step_s[0])
    assert float(three.draft_s[0]) == pytest.approx(3 * draft)
    assert float(three.round_s[0] - one.round_s[0]) == pytest.approx(
        float(three.verify_step_s[0] - one.verify_step_s[0]) + 2 * draft)
    assert draft < 0.1 * float(one.verify_step_s[0])


def test_speedup_falls_below_1_where_decode_is_compute_bound():
    # short context, large batch: the weight GEMMs outweigh the HBM stream, verifying k+1 = 4 tokens costs ~4x a
    # decode step. (On this layout, tp1 ep8 with attention-DP, the expert all-to-all is within 0.2% of the GEMMs,
    # so the binding label is compute or comms by a hair: the test asks the physics, compute over memory. The layout is
    # given: under DeepSeek-V3's measured routing skew without EPLB, 0.67 on 8 ranks, the free choice is pp 8.)
    sv = serving(deployment_request(*H200, None, {"kv_dtype": "fp8", "ep": 8}), [8192], [1024])
    sp = es.speculate(sv, np.array([8192.0]), 1024, 3, 0.85, draft=es.mtp_draft(sv))
    base = sv.run(8192.0, 1024.0)
    assert float(base.compute_s) > 1.2 * float(base.memory_s)
    assert sp.base_bound[0] in (engine.BOUNDS.index("compute"), engine.BOUNDS.index("comms"))
    assert float(sp.speedup[0]) < 1.0 and float(sp.cost_ratio[0]) > 1.0


@pytest.mark.parametrize("a,k", [(0.85, 1), (0.85, 3), (0.6, 7), (0.99, 2)])
def test_expected_tokens_closed_form(a, k):
    assert float(es.expected_tokens_per_step(a, k)) == pytest.approx((1 - a ** (k + 1)) / (1 - a), rel=1e-12)
    r = economics.speculate(model=H200[0], hardware=H200[1], batch=[1], draft="mtp", draft_tokens=k, acceptance=a)
    assert r.extra["summary"]["expected_tokens_per_step"] == pytest.approx((1 - a ** (k + 1)) / (1 - a))


def test_mtp_defaults_are_the_model_card_and_the_report():
    r = economics.speculate(model=H200[0], hardware=H200[1], batch=[1, 8], draft="mtp")
    s = r.extra["summary"]
    assert s["draft_tokens"] == 1 and s["acceptance"] == es.MTP_ACCEPTANCE == 0.85
    assert "2412.19437" in s["acceptance_source"] and s["mtp_modules"] == 1
    assert r.rows()[0]["draft_bound"] is not None and 0 < r.rows()[0]["draft_over_verify"] < 1


def test_model_without_mtp_is_refused():
    with pytest.raises(ValueError, match=r"^draft: model llama-3.1-70b"):
        economics.speculate(model="llama-3.1-70b", hardware="hgx-h200-8", draft="mtp")
    with pytest.raises(ValueError, match="^draft_cost"):
        economics.speculate(model=H200[0], hardware=H200[1], draft="mtp", draft_cost=0.1)
    with pytest.raises(ValueError, match="^draft"):
        economics.speculate(model=H200[0], hardware=H200[1], draft="medusa")


runner = CliRunner()


def test_cli_refuses_mtp_on_llama_in_one_line():
    r = runner.invoke(app, ["speculate", "--model", "llama-3.1-70b", "--hardware", "hgx-h200-8", "--draft", "mtp"])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "draft" in lines[0] and "llama-3.1-70b" in lines[0]


def test_cli_json_is_the_answer_payload():
    args = ["--batch", "1,64", "--context", "4096"]
    r = runner.invoke(app, ["speculate", "--model", H200[0], "--hardware", H200[1], "--draft", "mtp", *args,
                            "--json"])
    assert r.exit_code == 0, r.stderr
    want = economics.speculate(model=H200[0], hardware=H200[1], batch=[1, 64], context=4096, draft="mtp").payload()
    assert json.loads(r.stdout) == json.loads(json.dumps(want, default=str))
    for flag in ("--csv", "--explain"):
        out = runner.invoke(app, ["speculate", "--model", H200[0], "--hardware", H200[1], "--draft", "mtp", *args, flag])
        assert out.exit_code == 0 and ("MTP" in out.stdout or "draft" in out.stdout.splitlines()[0])
