"""Published decode figures at batch 1, predicted from outside the validation catalog (nothing here is fitted on):
MTP speculative decoding of DeepSeek-R1 on 8 x B200 (TensorRT-LLM), and a dense 70B on 8 NVLink GPUs under the
engines' one-shot all-reduce (issue 25, "Done when").

Before issue 25's MTP fix each draft paid a whole step's host time: MTP1 read 1.36x and MTP3 ~1.26x; now 1.81x and
2.39x (econ/speculative: the drafts run inside the verify step's graph). Before the rank-skew term went, each
all-reduce of a batch-1 Llama-70B TP8 step on 8 H100 took ~27 us and comms were 35% of the step (4.4 ms); now
6.9 us and 9% (1.1 ms of 12.1 ms), memory- or host-bound on H100, H200 and B200 under every engine.
"""

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.answers import economics
from tokenomy.answers.resolve import deployment, layout_of
from tokenomy.core import engine


def _acceptance(E: float, k: int) -> float:
    """The per-token acceptance α whose mean accepted length is E: the real root in (0, 1) of
    1 + α + ... + α^k = E (Leviathan et al. 2023, eq. 1)."""
    roots = np.roots([1.0] * (k + 1) - np.eye(1, k + 1, k)[0] * E)
    return float(next(r.real for r in roots if abs(r.imag) < 1e-12 and 0 < r.real < 1))


@pytest.mark.parametrize("k,accepted,speedup", [(1, 1.92, 1.78), (3, 2.82, 2.28)])
def test_deepseek_r1_on_8_b200_at_batch_1_within_15_percent_of_tensorrt_llm(k, accepted, speedup):
    # TensorRT-LLM tech blog 1, "Pushing Latency Boundaries: Optimizing DeepSeek-R1 Performance on NVIDIA B200
    # GPUs", table "Autoregressive MTP Layers": ISL 1k / OSL 2k at concurrency 1 on 8 x B200, 111 TPS/user without
    # MTP; MTP 1: 1.92 accepted tokens a step, 1.78x; MTP 3: 2.82, 2.28x (the MTP module reused autoregressively)
    a = _acceptance(accepted, k)
    r = economics.speculate(model="deepseek-r1", hardware="hgx-b200-8", batch=[1], context=2048, draft="mtp",
                            draft_tokens=k, acceptance=a)
    assert r.extra["summary"]["expected_tokens_per_step"] == pytest.approx(accepted)
    assert r.rows()[0]["speedup"] == pytest.approx(speedup, rel=0.15)


SYSTEMS = ("hgx-h100-8", "hgx-h200-8", "hgx-b200-8")


@pytest.mark.parametrize("hardware", SYSTEMS)
def test_dense_70b_batch_1_on_8_nvlink_gpus_is_not_comms_bound(hardware):
    # Llama-3.1-70B TP8, batch 1, 2,048 tokens of context: 160 all-reduces of one 16 KB token a step, each the
    # engines' one-shot custom kernel (vLLM/SGLang custom all-reduce, TensorRT-LLM ONESHOT under AUTO at <= 16
    # tokens on SM90 TP8): its measured latency (catalog/efficiency/allreduce.toml: 5.75 us on 8 H100, vLLM PR
    # 8558) plus the one-shot's bandwidth term, no wait added per collective
    row = tk.decode("llama-3.1-70b", hardware, tp=8, batch=1, context=2048).rows()[0]
    assert row["bound"] != "comms"
    assert row["comms_s"] < 0.15 * row["step_s"]
    for eng in ("trtllm", "vllm", "sglang"):
        dep = deployment("llama-3.1-70b", hardware, layout=layout_of(tp=8), serving_engine=eng)
        r = dep.run(1.0, 2048.0)
        assert int(np.ravel(r.bound)[0]) != engine.BOUNDS.index("comms")
        per_all_reduce = float(r.tp_comm_s) / float(dep.work(1.0, 2048.0).ar_count)
        alpha = float(np.asarray(dep.eff.allreduce_latency_s))
        assert alpha <= per_all_reduce < 1.5 * alpha, (eng, per_all_reduce, alpha)
