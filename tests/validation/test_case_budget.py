"""A case that carries its recipe's token budget per step (max_num_tokens) is predicted with it: InferenceX's
DeepSeek-R1 FP8 on 8 x B200 under SGLang 0.5.12 sets --chunked-prefill-size and --max-prefill-tokens to 32768 at TP8
and 8192 at TP4 (benchmarks/single_node/fixed_seq_len/dsr1_fp8_b200.sh), so a prefill pass of a 1k/1k wave packs
35 of its 922-token prompts where the engine profile's 8192 takes 8."""

import dataclasses

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.validation import run as vrun
from tokenomy.validation.case_setup import case_profile
from tokenomy.validation.predict import predict_serving
from tokenomy.validation.prepare import prepare_serving
from tokenomy.validation.theta import gather

SOURCE = "inferencex-sglang-0.5.12-b200"


@pytest.fixture(scope="module")
def prepared():
    return vrun.prepare((SOURCE,))


def test_the_rows_budget_is_the_recipes_and_the_profiles_elsewhere(prepared):
    default = loader.engine_file("sglang").scheduler.max_num_tokens
    for i, c in enumerate(prepared.serving.cases):
        case = c.case
        assert case.max_num_tokens == (32768 if case.tp == 8 else 8192), case.id
        assert case_profile(case).max_num_tokens == case.max_num_tokens
        assert prepared.serving.budget[i] == pytest.approx(case.max_num_tokens)
        unset = case.model_copy(update={"max_num_tokens": None})
        assert case_profile(unset).max_num_tokens == default


def test_a_wave_packed_into_fewer_passes_waits_longer_for_its_first_token(prepared):
    """At 64 clients of 922-token prompts the first wave's 64 prompts run in 2 passes of ~30k tokens under the
    recipe's budget and in 8 of 8k under the profile's: a prompt's first token waits for its whole pass, so the mean
    TTFT rises with the budget (the wave's work is the same)."""
    cases = [c for c in prepared.cases if c.id.endswith("tp8-1k1k-c64-ttft")]
    small = [dataclasses.replace(c, case=c.case.model_copy(update={"max_num_tokens": 8192})) for c in cases]
    s_big, s_small = prepare_serving(cases), prepare_serving(small)
    terms = vrun.stored_terms(list(s_big.chip))
    big, little = (predict_serving(s, gather(s.chip, terms)).value for s in (s_big, s_small))
    # the rise is the fitted terms' (over 2% on the terms before this stop's refit, +1.97% after it): 1% tells a rise
    # from equal passes, whose times the solver gives to 1e-9
    assert np.all(big > little * 1.01)
