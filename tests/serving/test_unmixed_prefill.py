"""Prompt chunks outside the decode step (serving/scheduler.unmixed_step): SGLang runs a prefill (extend) batch on
its own unless --enable-mixed-chunk (server_args enable_mixed_chunk False; scheduler.get_new_batch_prefill mixes the
running decodes in only under is_mixed_chunk), so a step carrying P prompt tokens is the prompt's pass and then the
decode step, t(0, P) + t(n, 0); vLLM V1 and TensorRT-LLM put the chunk in the decode step, t(n, P)."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.layout import Layout
from tokenomy.serving.scheduler import StepTimer, profile_of, unmixed_step

MIXED, SPLIT = replace(ROOFLINE, mixed_prefill=1.0), replace(ROOFLINE, mixed_prefill=0.0)


def _timer(eff, model="llama-3.1-70b", hardware="hgx-h100-8", tp=4, ctx=2048.0):
    d = Deployment(loader.model(model), loader.hardware(hardware), Layout(tp=tp), eff=eff)
    return StepTimer(d, ctx, ctx)


def test_the_profiles_say_which_engines_mix():
    assert profile_of(loader.engine_file("sglang"), 8).mixed_prefill is False
    assert profile_of(loader.engine_file("vllm"), 8).mixed_prefill is True
    assert profile_of(loader.engine_file("trtllm"), 8).mixed_prefill is True
    assert profile_of(loader.engine_file("sglang"), 8).on(ROOFLINE).mixed_prefill == 0.0


def test_a_step_with_a_chunk_is_the_prompt_pass_then_the_decode_step():
    mixed, split = _timer(MIXED), _timer(SPLIT)
    n, P = np.array([1.0, 16.0, 64.0, 256.0]), np.array([512.0, 2048.0, 4096.0, 8192.0])
    alone = mixed(0.0, P)  # the prompt's pass: no decodes beside it (one 1-token row, as a prefill-only step)
    decode = mixed(n, 0.0)
    assert np.allclose(split(n, P), alone + decode, rtol=1e-12)
    # the decode step's weights are read twice and its kernels launched twice: never faster than mixing
    assert np.all(split(n, P) > mixed(n, P))
    assert np.allclose(split(n, 0.0), decode, rtol=1e-12)  # a step without prompt tokens is the decode step
    assert np.allclose(split(0.0, P), alone, rtol=1e-12)  # and one without decodes the prompt's pass


def test_many_gives_the_same_steps_as_one_at_a_time():
    split = _timer(SPLIT)
    split.shape = (3,)
    n = np.array([2.0, 8.5, 40.0])
    loads = [np.zeros(3), np.array([0.0, 300.0, 1024.0]), 600.0]
    got = split.many(n, loads)
    for (t, _, _), P in zip(got, loads):
        assert np.allclose(t, split(n, P), rtol=1e-12)


def test_fewer_than_one_decode_scales_the_decode_step():
    t = unmixed_step(mixed_s=5.0, prompt_s=3.0, decode_s=2.0, n_dec=np.array([0.0, 0.5, 1.0, 7.0]),
                     prefill=100.0, mixed=0.0)
    assert np.allclose(t, [3.0, 4.0, 5.0, 5.0])
    assert np.allclose(unmixed_step(5.0, 3.0, 2.0, 7.0, 100.0, 1.0), 5.0)  # a mixing engine keeps t(n, P)


def test_the_engine_flag_is_checked():
    with pytest.raises(ValueError, match="mixed_prefill"):
        replace(ROOFLINE, mixed_prefill=2.0)


@pytest.mark.parametrize("eff", [SPLIT, MIXED], ids=["split", "mixed"])
def test_the_simulators_table_keeps_a_small_chunks_jump(eff):
    """The simulator reads steps off a grid in P (sim_table.StepTable): between P = 0 and the first grid node (512
    tokens at an 8,192 budget) a split step must not be interpolated down toward the decode-only step (a 50-token
    chunk read 15.4 ms against the engine's 24.9 ms, review): within 5% of the engine near the jump, P <= 50 (further
    into the cell the grid's linear read overstates a memory-bound prompt pass for both kinds of engine alike:
    +10% split, +16% mixed at P = 200, the grid's resolution, not the jump); a mixing engine's table has no
    extra row."""
    from tokenomy.serving.scheduler import step_time
    from tokenomy.serving.sim_table import StepTable

    d = Deployment(loader.model("llama-3.1-70b"), loader.hardware("hgx-h100-8"), Layout(tp=4), eff=eff)
    tab = StepTable.for_deployment(d, 64, 8192.0, 1000.0, 3000.0, 1000.0)
    assert (tab.first is None) == (eff is MIXED)
    for P in (1.0, 10.0, 50.0):
        engine = float(step_time(d, 32.0, 2000.0, P, 1000.0))
        assert tab(32, 2000.0, P) == pytest.approx(engine, rel=0.05), P
    assert tab(32, 2000.0, 0.0) == pytest.approx(float(step_time(d, 32.0, 2000.0, 0.0, 1000.0)), rel=1e-9)


def test_split_steps_is_the_one_rule_by_hand():
    """scheduler.split_steps, the composition StepTimer and validation's case steps share: from a mixed step
    t(n, P) = 1 + n + P/100 (made up, so each term is visible), an engine that does not mix answers t(0, P) +
    min(n, 1)·t(n, 0) where P > 0 and t(n, 0) elsewhere; one that mixes, t(n, P); the bound and reason stay the
    mixed step's."""
    from tokenomy.serving.scheduler import split_steps

    def mixed_many(n, loads):
        return [(1.0 + np.asarray(n) + np.asarray(P) / 100.0, "b", "r") for P in loads]

    n = np.array([0.0, 0.5, 3.0])
    got = split_steps(mixed_many, n, [np.array([0.0, 200.0, 200.0]), 0.0], 0.0)
    assert np.allclose(got[0][0], [1.0, 3.0 + 0.5 * 1.5, 3.0 + 4.0]) and got[0][1:] == ("b", "r")
    assert np.allclose(got[1][0], 1.0 + n)
    assert np.allclose(split_steps(mixed_many, n, [200.0], 1.0)[0][0], 3.0 + n)
