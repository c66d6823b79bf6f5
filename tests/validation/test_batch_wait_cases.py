"""A case that carries its recipe's TensorRT-LLM delayed batching (batch_wait_timeout_iters, batch_wait_max_tokens_ratio)
waits for it in the prediction: InferenceX's DeepSeek-R1 FP8 on 8 x B200 (TensorRT-LLM 1.3.0rc14) sets 40 and 0.8 at
1k/1k from 64 clients (benchmarks/single_node/dsr1_fp8_b200_trt.sh), and its later requests wait
serving.batch_wait.batch_wait_steps decode steps before their prompt is scheduled."""

import dataclasses

import numpy as np
import pytest

from tokenomy.validation import run as vrun
from tokenomy.validation.case_setup import case_profile
from tokenomy.validation.predict import predict_serving
from tokenomy.validation.prepare import prepare_serving
from tokenomy.validation.theta import gather
from tokenomy.serving.scheduler import batch_wait_steps

SOURCE = "inferencex-trtllm-1.3.0rc14-b200"


@pytest.fixture(scope="module")
def prepared():
    return vrun.prepare((SOURCE,))


def test_the_recipes_rows_wait_and_the_others_do_not(prepared):
    s = prepared.serving
    for i, c in enumerate(s.cases):
        case = c.case
        W = float(batch_wait_steps(case_profile(case), case.concurrency, case.isl, case.osl))
        if case.batch_wait_timeout_iters:  # the c64 and c128 rows
            assert case.concurrency >= 64 and W > 15.0
            assert (s.wait_iters[i], s.wait_tokens[i]) == (40.0, pytest.approx(0.8 * case_profile(case).max_num_tokens))
        else:
            assert W == 0.0 and s.wait_iters[i] == 0.0 and s.wait_tokens[i] == 0.0
        assert s.poll[i] == 0.0  # the receive interval is 1: the wait is delayed batching's, solved at the batch


def test_the_solved_wait_is_the_closed_loops(prepared):
    """steady.solve charges held_steps at a = B/life beside B − 1 decodes: at the rows' C clients, whole prompts
    (one chunk: life = OSL steps), the closed loop's batch_wait_steps at U = C."""
    from tokenomy.validation.predict import _served
    from tokenomy.validation.prepare import SCENARIO_CODE

    s = prepared.serving
    idx = np.flatnonzero((s.wait_iters > 0) & (s.scenario == SCENARIO_CODE["concurrency"]))  # the rows that wait
    sk = s.take(idx)
    r = _served(sk, gather(sk.chip, vrun.stored_terms(list(sk.chip))), True)
    W = [float(batch_wait_steps(case_profile(c.case), c.case.concurrency, c.case.isl, c.case.osl)) for c in sk.cases]
    assert idx.size >= 6 and np.allclose(r.wait_steps, W, rtol=1e-9)


def test_the_wait_lands_on_ttft(prepared):
    """Without the recipe's settings the c64 TTFT falls by W plain decode steps of the solved batch (the first wave,
    10% of the run's requests, does not wait: no decodes run when it lands)."""
    cases = [c for c in prepared.cases if c.id.endswith("1k1k-c64-ttft")]
    off = [dataclasses.replace(c, case=c.case.model_copy(update={"batch_wait_timeout_iters": None,
                                                                  "batch_wait_max_tokens_ratio": None}))
           for c in cases]
    s_on, s_off = prepare_serving(cases), prepare_serving(off)
    terms = vrun.stored_terms(list(s_on.chip))
    on, no = (predict_serving(s, gather(s.chip, terms)).value for s in (s_on, s_off))
    assert s_off.wait_iters[0] == 0.0 and s_on.wait_iters[0] == 40.0
    assert np.all(on > no * 3.0)  # ~130 ms -> ~600 ms: the wait dominates
