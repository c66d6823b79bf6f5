"""The eager launch of prompt passes (core/times.eager_prompt_s): e·K on the host of a pass that carries prompt
tokens, nothing on a decode step without them; hidden under the GPU as the host overlap h says."""

from dataclasses import replace

import numpy as np

from tokenomy.arch.kernels import model_kernels
from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.layout import Layout
from tokenomy.serving.scheduler import profile_of

E = 6.25e-5  # s a kernel: sgl-project/sglang PR 12160, a 1-token DeepSeek-V3 prefill 82.6 ms eager / 1,321 kernels


def _dep(model="deepseek-v3", hardware="hgx-h200-8", tp=8):
    return Deployment(loader.model(model), loader.hardware(hardware), Layout(tp=tp))


def test_a_prompt_pass_adds_e_times_its_kernels_to_the_host_without_overlap():
    d = _dep()
    K = model_kernels(loader.model("deepseek-v3"))  # 61 layers: 3 dense MLA (15 kernels) + 58 MoE MLA (22)
    assert K == 3 * 15 + 58 * 22
    plain = d.run(1.0, 922.0, 922.0, eff=ROOFLINE)
    eager = d.run(1.0, 922.0, 922.0, eff=replace(ROOFLINE, eager_prefill_s_per_kernel=E))
    # h = 0: the host's launches add to the GPU's time, 1,321 x 62.5 us = 82.6 ms (SGLang PR 12160's 1-token pass)
    assert np.isclose(eager.step_s - plain.step_s, K * E, rtol=1e-9)
    assert np.isclose(K * E, 0.0825625, rtol=1e-9)


def test_under_the_overlap_scheduler_the_pass_takes_the_longer_of_gpu_and_launches():
    d = _dep()
    lanes = replace(ROOFLINE, host_overlap=1.0)
    short, long_ = (d.run(1.0, n, n, eff=lanes).step_s for n in (16.0, 32768.0))
    e_short, e_long = (d.run(1.0, n, n, eff=replace(lanes, eager_prefill_s_per_kernel=E)).step_s
                       for n in (16.0, 32768.0))
    K = model_kernels(loader.model("deepseek-v3"))
    assert short < K * E < long_  # a 16-token prompt's GPU work is shorter than its launches, 32k tokens' longer
    assert np.isclose(e_short, K * E, rtol=1e-9)  # host-bound: the launches
    assert np.isclose(e_long, long_, rtol=1e-12)  # GPU-bound: the launches hide under the kernels


def test_a_decode_step_replays_its_graph_unless_it_carries_prompt_tokens():
    d = _dep()
    eff = replace(ROOFLINE, eager_prefill_s_per_kernel=E)
    B = np.array([1.0, 64.0])
    plain = d.run(B, 2048.0, eff=ROOFLINE).step_s
    assert np.allclose(d.run(B, 2048.0, eff=eff).step_s, plain, rtol=1e-12)  # decode only: no eager launch
    mixed_plain = d.run(B, 2048.0, eff=ROOFLINE, prefill_tokens=512.0).step_s
    mixed = d.run(B, 2048.0, eff=eff, prefill_tokens=512.0).step_s
    K = model_kernels(loader.model("deepseek-v3"))
    assert np.allclose(mixed - mixed_plain, K * E, rtol=1e-9)


def test_the_engine_profiles_carry_the_figure_only_where_it_is_sourced():
    assert profile_of(loader.engine_file("sglang"), 8).eager_prefill_s_per_kernel == E  # [prefill_launch]
    assert profile_of(loader.engine_file("vllm"), 8).eager_prefill_s_per_kernel == 0.0
    assert profile_of(loader.engine_file("sglang"), 8).on(ROOFLINE).eager_prefill_s_per_kernel == E


def test_tensorrt_llm_runs_prompts_eagerly_from_its_pytorch_flow_on():
    """[prefill_launch] since = "1.0": the PyTorch backend's context iterations run outside its generation-only CUDA
    graphs; the C++ runtime before it (0.9-0.17, and 0.21's default) replays compiled engines."""
    trt = loader.engine_file("trtllm")
    assert [profile_of(trt, 8, version=v).eager_prefill_s_per_kernel for v in ("0.14.0", "0.21.0rc2", "1.0",
                                                                             "1.3.0rc14")] == [0.0, 0.0, E, E]
    assert trt.eager_prefill_at("0.17") == 0.0 and trt.eager_prefill_at("1.1") == E


def test_a_case_states_whether_its_prompt_passes_run_from_graphs():
    """ServingCase.prefill_cuda_graph: True (piecewise CUDA graphs: InferenceX's TensorRT-LLM recipe from 64 clients)
    charges no launch, False the engine's eager figure before its version gate (a PyTorch-backend run of 0.21),
    None the engine file at the case's version."""
    from tokenomy.validation.case_setup import case_profile
    from tokenomy.validation.schema import ServingCase

    base = dict(id="t", metric="ttft_s", value=0.1, model="deepseek-r1", hardware="b200", chips=8, tp=8,
                engine="trtllm", scenario="concurrency", concurrency=4, isl=922, osl=922, weight_dtype="fp8",
                kv_dtype="fp8", published="test")
    at = lambda **kw: case_profile(ServingCase(**(base | kw))).eager_prefill_s_per_kernel  # noqa: E731
    assert at(engine_version="1.3.0rc14") == E
    assert at(engine_version="1.3.0rc14", prefill_cuda_graph=True) == 0.0
    assert at(engine_version="0.21.0rc2") == 0.0
    assert at(engine_version="0.21.0rc2", prefill_cuda_graph=False) == E
    assert at(engine="vllm", engine_version="0.10.1", prefill_cuda_graph=False) == 0.0  # no figure stated: none


def test_a_negative_figure_or_interval_is_refused_naming_the_field():
    import pytest
    from pydantic import ValidationError

    from tokenomy.catalog.schema.engines import EnginePrefillLaunch, EngineScheduler
    with pytest.raises(ValidationError, match="eager_s_per_kernel"):
        EnginePrefillLaunch(eager_s_per_kernel=-1e-5, source="test", as_of="2025-10-26")
    with pytest.raises(ValidationError, match="recv_interval"):
        EngineScheduler(chunked_prefill=True, max_num_tokens=8192, max_batch=1024, recv_interval=0, source="test",
                        as_of="2025-10-26")
