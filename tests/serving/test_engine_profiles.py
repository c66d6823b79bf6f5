"""Engine profiles (catalog/engines) carry what the issue asks of them, each sourced: the KV-cache dtype a served
deployment gets when none is given (the engine's 'auto': vLLM and SGLang keep the model's bf16 whatever the
weights, TensorRT-LLM follows an FP8 or NVFP4 checkpoint's FP8 cache; an explicit --kv-dtype wins; the dtype is
named in the answer) and the engine's all-reduce (shown in --explain)."""

from __future__ import annotations

import json

import pytest
from cli_runner import CliRunner

from tokenomy.answers.workloads import engine_profile, serve, serving_kv_dtype
from tokenomy.catalog import loader
from tokenomy.cli import serve as _serve_command  # noqa: F401  (registers `serve`)
from tokenomy.cli.app import app


@pytest.mark.parametrize("engine, weights, want", [("vllm", "fp8", "bf16"), ("sglang", "fp8", "bf16"),
                                                  ("trtllm", "fp8", "fp8"), ("trtllm", "nvfp4", "fp8"),
                                                  ("trtllm", "bf16", "bf16"), ("vllm", None, "bf16")])
def test_the_engine_picks_the_kv_dtype_by_the_weights(engine, weights, want):
    assert serving_kv_dtype("llama-3.1-70b", engine, weights) == want


def test_a_checkpoints_own_dtype_counts_when_weights_are_not_overridden():
    # DeepSeek-R1 ships fp8 weights: TensorRT-LLM's default cache for it is fp8, vLLM's bf16
    assert loader.model("deepseek-r1").quantization.dense == "fp8"
    assert serving_kv_dtype("deepseek-r1", "trtllm") == "fp8"
    assert serving_kv_dtype("deepseek-r1", "vllm") == "bf16"


def test_an_explicit_kv_dtype_wins():
    assert serving_kv_dtype("llama-3.1-70b", "trtllm", "fp8", "bf16") == "bf16"


def test_every_engine_profile_states_its_default_and_its_source():
    for name in ("vllm", "sglang", "trtllm"):
        f = loader.engine_file(name)
        assert f.kv_dtype.default in ("bf16", "fp16") and len(f.kv_dtype.source) > 20
        assert engine_profile(name).kv_dtype_for("bf16") == "bf16"


def test_the_default_decides_the_kv_capacity_and_is_named():
    kw = dict(chips=2, tp=2, concurrency=[512], isl=4096, osl=1024, weight_dtype="fp8", engine="trtllm")
    auto, wide = serve("llama-3.1-70b", "h100-sxm", **kw), serve("llama-3.1-70b", "h100-sxm", kv_dtype="bf16", **kw)
    assert "KV fp8" in auto.title and "KV bf16" in wide.title
    # an fp8 cache holds about twice the sequences of a bf16 one in the same HBM
    assert auto.rows()[0]["b_kv"] == pytest.approx(2 * wide.rows()[0]["b_kv"], rel=0.05)


def test_the_cli_leaves_the_choice_to_the_engine():
    args = ["serve", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--chips", "2", "--tp", "2",
            "--concurrency", "8", "--weight-dtype", "fp8", "--json"]
    runs = {e: CliRunner().invoke(app, [*args, "--engine", e]) for e in ("trtllm", "vllm")}  # as the process runs it
    for r in runs.values():
        assert r.exit_code == 0, r.stderr
    t, v = (_first(json.loads(runs[e].stdout)) for e in ("trtllm", "vllm"))
    # same chips and weights: trtllm's fp8 cache fits more sequences than vLLM's bf16 one
    assert t["b_kv"] > 1.5 * v["b_kv"]


def _first(payload):
    return (payload["rows"] if isinstance(payload, dict) else payload)[0]


def test_every_engine_states_its_all_reduce():
    for name in ("vllm", "sglang", "trtllm"):
        a = loader.engine_file(name).all_reduce
        assert len(a.implementation) > 20 and len(a.source) > 40
        assert a.implementation.split()[0].lower() in engine_profile(name).all_reduce.lower()
    # vLLM's custom kernels stop at 8 MiB (max_size = 8192 * 1024) and run on 2/4/6/8 GPUs
    v = loader.engine_file("vllm").all_reduce
    assert v.custom_max_bytes == 8 * 2**20 and v.world_sizes == [2, 4, 6, 8]


def test_explain_names_the_engines_all_reduce():
    res = serve("llama-3.1-70b", "h100-sxm", chips=8, tp=8, concurrency=[16], engine="sglang")
    line = next(s for s in res.explain() if s.startswith("all-reduce"))
    assert "sglang" in line and "8 MiB" in line


def test_a_serving_sweep_takes_the_engines_kv_dtype_as_serve_does():
    import tokenomy as tk

    kw = dict(weight_dtype="fp8", concurrency=[64], engine="trtllm")
    ds = tk.sweep(model="llama-3.1-70b", hardware="h100-sxm", tp=2, **kw)
    want = serve("llama-3.1-70b", "h100-sxm", chips=2, tp=2, **kw).rows()[0]
    assert "auto" in str(ds["kv_dtype"].values)
    assert float(ds["requests_per_s"].values.ravel()[0]) == pytest.approx(want["requests_per_s"], rel=1e-9)
