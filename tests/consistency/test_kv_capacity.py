"""serve's KV capacity and decode's memory fit agree (issue 25, item 8): the sequences of ISL + OSL tokens that
`serve` says fit (serving.scheduler.sequences_held, B_kv) fit in `decode` at that batch and context, and a clearly larger
batch does not — over dense TP, MoE EP with attention-DP, attention-TP beside EP, kv-batch, pipelines and dp > 1.

The two doors size memory differently on purpose: the engine's profile gives the cache hbm_fraction of the exposed
HBM (its activations reserved at a full token budget per scheduler), decode may use all of it. So the comparison is
made twice: at the profile's own share B_kv must fit in decode (decode has the more room); at a share of 1.0 of the
total, both doors stand on the same usable HBM (Deployment.peaks.hbm_bytes) and B_kv must be decode's largest
batch to within the rounding to whole sequences per slot and the activation reserve (under 10%). Before the fix
one attention rank's KV was counted for the whole group: DeepSeek-R1 at tp1 ep8 on 8 x B200 had B_kv = 500 at
1024/1024 (decode fits 4,000), DeepSeek-V3 at tp8 kv-batch on 8 x H200 356 (decode fits 2,000).
"""

from dataclasses import replace

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.answers.resolve import deployment, layout_of
from tokenomy.answers.workloads import engine_profile
from tokenomy.serving.scheduler import sequences_held, scheduler_ranks

ISL, OSL = 1024, 1024  # a multiple of every profile's KV block: B_kv's length is the decode context
LARGER = 1.1  # "clearly larger": past the 1/slot rounding and the activation reserve of every case below

CASES = [  # (model, hardware, degrees, what the case covers)
    ("llama-3.1-70b", "hgx-h100-8", dict(tp=8), "dense TP"),
    ("llama-3.1-8b", "hgx-h100-8", dict(tp=2, dp=4), "dense TP, dp > 1"),
    ("llama-3.1-70b", "hgx-h100-8", dict(tp=4, pp=2), "pipeline"),
    ("deepseek-r1", "hgx-b200-8", dict(tp=1, ep=8), "MoE EP, attention-DP (MLA)"),
    ("qwen3-30b-a3b", "hgx-h100-8", dict(tp=2, ep=4), "MoE EP, attention-DP over TP pairs (GQA)"),
    ("qwen3-30b-a3b", "hgx-h100-8", dict(tp=1, ep=4, dp=2), "MoE EP, attention-DP, dp > 1"),
    ("deepseek-v3", "hgx-h200-8", dict(tp=1, ep=8, attn_dp=False), "MoE EP, attention TP beside it"),
    ("deepseek-v3", "hgx-h200-8", dict(tp=8, kv_batch=True), "kv-batch (MLA)"),
    ("llama-3.1-70b", "hgx-h100-8", dict(tp=8, kv_batch=True), "kv-batch within the KV heads (GQA)"),
    ("deepseek-v3.2", "hgx-b200-8", dict(tp=1, ep=8), "MoE EP, attention-DP, MLA + DSA indexer cache"),
    ("kimi-k2.5", "hgx-b200-8", dict(tp=8, kv_batch=True), "kv-batch (MLA, 64 heads)"),
    ("qwen3.5-397b-a17b", "hgx-b200-8", dict(tp=2, ep=4), "MoE EP, attention-DP, hybrid linear attention"),
    ("minimax-m2.5", "hgx-b200-8", dict(tp=1, ep=8, attn_dp=False), "MoE EP, attention TP beside it (GQA)"),
    ("llama-4-scout-17b-16e-instruct", "hgx-b200-8", dict(tp=4, dp=2), "MoE, chunked local attention, dp > 1"),
    ("mimo-v2-flash", "hgx-b200-8", dict(tp=1, ep=8), "MoE EP, attention-DP, sliding-window layers"),
]


def _dep(model, hardware, degrees):
    lay = layout_of(degrees.get("tp"), degrees.get("ep"), degrees.get("pp"), degrees.get("dp"), None,
                    degrees.get("attn_dp"), degrees.get("kv_batch"))
    return deployment(model, hardware, layout=lay, kv_dtype="bf16")


def _decode_fits(model, hardware, degrees, batches) -> list[bool]:
    r = tk.decode(model, hardware, batch=[int(b) for b in batches], context=ISL + OSL, kv_dtype="bf16", **degrees)
    return [row["fits"] for row in r.rows()]


@pytest.mark.parametrize("model, hardware, degrees, what", CASES, ids=[c[3] for c in CASES])
def test_serve_capacity_fits_in_decode(model, hardware, degrees, what):
    """At the engine's own HBM share, serve's B_kv sequences fit in decode."""
    dep = _dep(model, hardware, degrees)
    prof = engine_profile("vllm", int(dep.layout.tp))
    b = float(sequences_held(dep, prof, ISL, OSL))
    assert b >= 1
    assert _decode_fits(model, hardware, degrees, [b]) == [True]


@pytest.mark.parametrize("model, hardware, degrees, what", CASES, ids=[c[3] for c in CASES])
def test_serve_capacity_is_decodes_largest_batch(model, hardware, degrees, what):
    """On the same usable HBM (a share of 1.0 of the total), B_kv fits in decode and LARGER x B_kv does not."""
    dep = _dep(model, hardware, degrees)
    assert float(np.asarray(dep.eff.hbm_usable_fraction)) == 1.0  # decode's usable HBM is the exposed HBM
    prof = replace(engine_profile("vllm", int(dep.layout.tp)), hbm_fraction=1.0, fraction_of="total")
    b = float(sequences_held(dep, prof, ISL, OSL))
    # the serve side reserves a full token budget of activations per scheduler: at least decode's B_kv tokens
    assert b <= prof.max_num_tokens * scheduler_ranks(dep.layout) * int(dep.layout.pp)
    larger = np.ceil(LARGER * b)
    assert _decode_fits(model, hardware, degrees, [b, larger]) == [True, False], (b, larger)


def test_serve_reports_the_same_capacity():
    """tk.serve's b_kv is that B_kv (the door itself, not only the function it calls): DeepSeek-R1 at tp1 ep8 on
    8 x B200 under vLLM, 1024/1024 tokens, holds ~3,900 sequences (it had said 500)."""
    model, hardware, degrees = CASES[3][:3]
    row = tk.serve(model, hardware, concurrency=64, isl=ISL, osl=OSL, kv_dtype="bf16", **degrees).rows()[0]
    dep = _dep(model, hardware, degrees)
    assert row["b_kv"] == float(sequences_held(dep, engine_profile("vllm", 1), ISL, OSL))
    assert row["b_kv"] > 3000
