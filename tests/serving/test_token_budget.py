"""The scheduler's token budget caps the running batch (serving.scheduler.budget_batch): a step carries at most
N tokens, so a prefill-heavy workload cannot keep the KV cache's whole batch running, and its throughput cannot
grow with TP past what the chips can compute."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.scheduler import budget_batch
from tokenomy.serving.steady import steady

N = 8192.0


@pytest.mark.parametrize("isl,osl", [(2048, 128), (5000, 500), (20000, 2000), (128, 128), (1000, 1000)])
def test_the_steps_of_the_capped_batch_fit_the_budget(isl, osl):
    cap = 4096.0
    B = float(budget_batch(cap, osl, isl, N))
    life = np.ceil(isl / max(N - B, 1.0)) + osl - 1.0  # steps a request holds its slot
    tokens_per_step = B * (osl - 1.0) / life + B * isl / life  # decodes + the prefill the arrivals need
    assert 1.0 <= B <= cap
    assert tokens_per_step <= N * (1 + 1e-9)
    if B < cap:  # binding: one more sequence would overflow the budget
        life1 = np.ceil(isl / max(N - B - 1.0, 1.0)) + osl - 1.0
        assert (B + 1.0) * (isl + osl - 1.0) / life1 > N * 0.999


def test_a_decode_heavy_workload_keeps_its_kv_batch():
    assert budget_batch(1500.0, 2048, 128, N) == 1500.0


def test_prefill_heavy_throughput_stays_under_the_compute_bound():
    """2048 in / 128 out on Llama-3.1-70B: every request needs 2048·2·N_params FLOPs of prefill, so requests/s per
    chip <= peak / (2048·2·70e9) (70.6 B parameters: the model card; attention only adds). Before the cap, TP 8's
    bigger KV batch (3,000 running) claimed more than that."""
    per_chip = []
    for tp in (1, 2, 4, 8):
        dep = deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(tp), weight_dtype="fp8")
        s = steady(dep, engine_profile("trtllm", tp), isl=2048, osl=128, concurrency=[1e6])
        bound = dep.hardware.chip.peak_flops_per_s["fp8"] / (2048 * 2 * 70e9)
        per_chip.append(float(s.requests_per_s[0]) / tp)
        assert per_chip[-1] < bound, (tp, per_chip[-1], bound)
    assert per_chip[-1] <= per_chip[0]  # TP adds all-reduces to compute-bound prefill, never free compute
