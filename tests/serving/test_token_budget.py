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
    # TP adds all-reduces to compute-bound prefill, never free compute: TP 8 serves no more per chip than TP 2 (TP 1
    # is no reference: 70 GB of FP8 weights leave an 80 GB H100 room for ~13 running sequences, KV-bound)
    assert per_chip[-1] <= per_chip[1]


def test_a_cap_above_the_budget_finds_the_true_limit_not_the_budget():
    """Iterating from a cap >= N stalled at the false root B = N (no room left for prefill: TTFT and requests/s
    came out negative); the closed form gives the same limit whatever the cap."""
    assert budget_batch(8192.0, 128, 2048, N) == budget_batch(8000.0, 128, 2048, N) == budget_batch(1e5, 128, 2048, N)
    r = engine_profile("sglang", 8, max_num_tokens=1024)
    dep = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(8))
    s = steady(dep, r, isl=2048, osl=128, concurrency=[4096])
    assert float(s.requests_per_s[0]) > 0 and float(s.ttft_s[0]) > 0


def test_dp_replicas_each_carry_their_own_budget_and_batch_cap():
    """Four tp2 replicas serve four times what one tp2 replica does on a budget-bound workload (each scheduler has
    max_num_tokens and max_batch of its own, as the disaggregated pools count them)."""
    one = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(tp=2))
    four = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(tp=2, dp=4))
    prof = engine_profile("vllm", 2, max_batch=2048)
    x1 = float(steady(one, prof, isl=2048, osl=128, concurrency=[1024]).requests_per_s[0])
    x4 = float(steady(four, prof, isl=2048, osl=128, concurrency=[4096]).requests_per_s[0])
    assert x4 == pytest.approx(4 * x1, rel=0.02)
