"""Where a serving engine keeps each request's bookkeeping (catalog/engines [host] cpp_executor_before;
serving.engine_profile.host_sequence_share): TensorRT-LLM before 1.0 serves built TensorRT engines through its C++
executor and pays none of the fitted per-sequence host time o_seq; its PyTorch backend (1.0 on), vLLM and SGLang
keep every request in a Python scheduler and pay it. Before this, o_seq was charged to every engine alike: left out of
the fit, TensorRT-LLM 0.17's max-throughput table was predicted with o_seq = 12 us (the Python engines' large
batches set it), 36 ms a step at 3,000 running."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.serving.engine_profile import host_sequence_share, profile_of
from tokenomy.validation import load, run
from tokenomy.validation.prepare import prepare_serving
from tokenomy.validation.train_predict import prepare_training


@pytest.mark.parametrize("engine, version, share", [("trtllm", "0.9.0", 0.0), ("trtllm", "0.14", 0.0),
                                                    ("trtllm", "0.17", 0.0), ("trtllm", "1.0", 1.0),
                                                    ("trtllm", "1.3.0rc14", 1.0), ("vllm", None, 1.0),
                                                    ("sglang", None, 1.0)])
def test_each_engine_version_pays_its_runtimes_share(engine, version, share):
    assert profile_of(loader.engine_file(engine), 1, version=version).host_per_sequence == share


def test_no_cut_means_a_python_scheduler_at_every_version():
    assert host_sequence_share(None, "0.1") == 1.0
    assert host_sequence_share("1.0", "0.99") == 0.0 and host_sequence_share("1.0", "1.0") == 1.0


def test_the_profile_scales_the_sets_per_sequence_time():
    eff = load.efficiency_set("h100-sxm")
    assert eff.sequence_overhead_s > 0
    f = loader.engine_file("trtllm")
    assert profile_of(f, 1, version="0.17").on(eff).sequence_overhead_s == 0.0
    assert profile_of(f, 1, version="1.0").on(eff).sequence_overhead_s == eff.sequence_overhead_s


def _predicted(cases: list, o_seq: float) -> list[float]:
    p = run.Prepared(cases, prepare_serving(cases), prepare_training(cases))
    terms = {c: t.model_copy(update={"sequence_overhead_s": o_seq}) for c, t in run.stored_terms(["h200"]).items()}
    return [r["calibrated"] for r in run.rows(p, terms)]


def test_a_cpp_run_does_not_move_with_o_seq_and_a_python_run_does():
    """Mixtral-8x7B on 8 x H200 at 128/2048, 3,000 requests queued at once: TensorRT-LLM 0.17's run (C++ executor)
    is the same at o_seq 0 and 12 us; the same run on a Python scheduler without overlap (vLLM 0.10) slows by
    12 us x its ~3,000 running a step."""
    cpp = next(c for c in load.cases(("trtllm-0.17-throughput",))
               if c.id == "trtllm017-mixtral-8x7b-v0-1-h200-tp8-128-2048")
    python = dataclasses.replace(cpp, case=cpp.case.model_copy(
        update={"id": cpp.case.id + "-as-vllm", "engine": "vllm", "engine_version": "0.10.0", "kv_free_fraction": None}))
    (c0, p0), (c1, p1) = _predicted([cpp, python], 0.0), _predicted([cpp, python], 12e-6)
    assert c0 == pytest.approx(c1, rel=1e-9)
    assert p1 < 0.9 * p0
