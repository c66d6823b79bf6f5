"""Disaggregated serving: the KV hand-off in TTFT, TPOT as the decode pool's step, chips of both pools, refusals.
The pool-split search's ranking (its best plan meets the SLOs and sits on its front; SLOs no plan meets name the
closest): tests/cli/test_plan_serving.py, one check for agg and disagg."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile, serve
from tokenomy.arch.params import kv_bytes_at_context
from tokenomy.core.layout import Layout
from tokenomy.serving.disagg import DisaggLoad, PoolDoesNotFit, disagg

ISL, OSL = 2048, 512


@pytest.fixture(scope="module")
def pools():
    base = deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout())
    return base.with_(layout=Layout(4)), base.with_(layout=Layout(4)), engine_profile("vllm", 4)


def _run(pools, crosses_domain=None, **load):
    pre, dec, prof = pools
    return disagg(pre, dec, prof, prof, DisaggLoad(ISL, OSL, **load), crosses_domain=crosses_domain)


def test_ttft_includes_the_kv_transfer_over_the_links_alpha_beta(pools):
    pre, _, _ = pools
    kv = kv_bytes_at_context(pre.model, ISL, pre.kv_dtype)  # independent: the arch's own KV count
    up, out = pre.topo.scale_up, pre.topo.scale_out
    near, far = _run(pools, concurrency=[8], crosses_domain=False), _run(pools, concurrency=[8], crosses_domain=True)
    assert near.kv_bytes == pytest.approx(kv, rel=1e-12)
    assert near.kv_transfer_s == pytest.approx(up.latency_s + kv / up.bytes_per_s, rel=1e-12)
    assert far.kv_transfer_s == pytest.approx(out.latency_s + kv / out.bytes_per_s, rel=1e-12)
    o_req = float(pre.eff.request_overhead_s)
    for s in (near, far):  # TTFT = prefill wait + pass + transfer + half a decode step + the first + overhead
        rest = s.prefill_wait_s + s.prefill_pass_s + 1.5 * s.tpot_s + s.queue_s + o_req
        assert float(s.ttft_s[0]) == pytest.approx(float(rest[0]) + s.kv_transfer_s, rel=1e-9)
    assert float(far.ttft_s[0]) > float(near.ttft_s[0])


def test_pools_in_different_domains_use_scale_out():
    a = serve("llama-3.1-70b", "hgx-h100-8", mode="disagg", concurrency=[8], isl=ISL, osl=OSL,
              pools=dict(prefill_chips=4, decode_chips=4, prefill_tp=4, decode_tp=4)).rows()[0]
    b = serve("llama-3.1-70b", "hgx-h100-8", mode="disagg", concurrency=[8], isl=ISL, osl=OSL,
              pools=dict(prefill_chips=8, decode_chips=8, prefill_tp=8, decode_tp=8)).rows()[0]
    assert a["kv_link"] == "scale-up" and b["kv_link"] == "scale-out"
    assert b["kv_transfer_s"] > 5 * a["kv_transfer_s"]


def test_tpot_is_the_decode_pools_engine_step(pools):
    _, dec, _ = pools
    s = _run(pools, concurrency=[32])
    B = float(s.batch[0])
    lo, hi = (float(dec.run(x, ISL + OSL / 2.0).step_s) for x in (np.floor(B), np.ceil(B)))
    assert float(s.tpot_s[0]) == pytest.approx(lo + (B - np.floor(B)) * (hi - lo), rel=1e-12)


def test_chips_are_both_pools_and_throughput_per_chip_uses_them(pools):
    s = _run(pools, rate=[1.0, 2.0])
    assert s.chips == 8
    assert np.allclose(s.tokens_per_s_per_chip, s.requests_per_s * OSL / 8.0)
    assert np.allclose(s.requests_per_s, [1.0, 2.0])
    price = pools[0].price / 3600.0
    assert np.allclose(s.usd_per_mtok_input, 1e6 * 4 * price / (s.requests_per_s * ISL))
    assert np.allclose(s.usd_per_mtok_output, 1e6 * 4 * price / (s.requests_per_s * OSL))


def test_open_loop_beyond_capacity_is_capacity_limited(pools):
    s = _run(pools, rate=[1.0, 1e4])
    assert not s.capacity_limited[0] and s.capacity_limited[1] and np.isinf(s.ttft_s[1])


def test_a_pool_that_does_not_fit_is_refused_by_name():
    base = deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout())
    big, one = base.with_(layout=Layout(4)), base.with_(layout=Layout(1))
    prof = engine_profile("vllm", 1)
    with pytest.raises(PoolDoesNotFit, match="does not fit: decode pool"):
        disagg(big, one, prof, prof, DisaggLoad(ISL, OSL, concurrency=[4]))
    with pytest.raises(PoolDoesNotFit, match="does not fit: prefill pool"):
        disagg(one, big, prof, prof, DisaggLoad(ISL, OSL, concurrency=[4]))


def test_the_prefill_waits_for_the_decode_schedulers_receive(pools):
    """SGLang's PD hand-shake: the prefill starts a request only once the decode side has received and pre-allocated
    it, so a decode scheduler receiving every R-th step (--scheduler-recv-interval R) adds (R − 1)/2 of its steps
    where others decode; one client lands on an idle decode pool, which receives at once."""
    import dataclasses
    pre, dec, prof = pools
    slow = dataclasses.replace(prof, recv_interval=10)
    load = DisaggLoad(ISL, OSL, concurrency=[1, 16, 64])
    base = disagg(pre, dec, prof, prof, load)
    polled = disagg(pre, dec, prof, slow, load)  # the decode pool's receive interval alone
    one_client = float(polled.ttft_s[0] - base.ttft_s[0])
    assert one_client == pytest.approx(0.0, abs=1e-3 * float(base.ttft_s[0]))  # B ~ 1: nothing else decodes
    # at 16 and 64 clients: TTFT = 4.5 decode steps + the rest, each at the polled run's own step and waits
    rest = polled.prefill_wait_s + polled.prefill_pass_s + polled.kv_transfer_s + 1.5 * polled.tpot_s + \
        polled.queue_s + float(pre.eff.request_overhead_s)
    assert np.allclose(polled.ttft_s[1:], rest[1:] + 4.5 * polled.tpot_s[1:], rtol=1e-9)
    assert np.all(polled.ttft_s[1:] > base.ttft_s[1:])
    # the prefill pool's receive interval does not delay it: a prefill step is followed by a receive
    assert np.allclose(disagg(pre, dec, slow, prof, load).ttft_s, base.ttft_s, rtol=1e-9)


def test_an_open_loops_arrival_waits_for_the_receive_from_a_random_point_of_its_cycle(pools):
    """Open loop (Poisson arrivals): the decode scheduler receives at steps 0, R, 2R, ... and an arrival at a random
    instant waits R/2 steps on average, 1/2 of it the rest of the step under way that a scheduler receiving every
    step (R = 1) waits too; the interval adds (R − 1)/2 steps where the pool is busy, a share min(1, B) of the time
    (engine_profile.poll_wait_s, closed=False), not the closed loop's beside B − 1 others. The formula against the
    cycle itself (random instants, receives every R steps), then in disagg's TTFT at a light load (B < 2: the closed
    loop's form would charge about nothing) and a heavier one."""
    import dataclasses

    from tokenomy.serving.engine_profile import poll_wait_s

    t, rng = 0.013, np.random.default_rng(3)

    def sampled(R):  # the mean wait of random instants for the next receive
        instants = rng.uniform(0.0, 1000.0 * R * t, 200_000)
        return float(np.mean(np.ceil(instants / (R * t)) * R * t - instants))

    every_step = sampled(1)
    assert every_step == pytest.approx(t / 2.0, rel=0.01)
    for R in (10, 30):
        assert poll_wait_s((R - 1) / 2.0, 7.0, t, closed=False) == pytest.approx(sampled(R) - every_step, rel=0.01)
    assert poll_wait_s(4.5, 0.25, t, closed=False) == pytest.approx(0.25 * 4.5 * t, rel=1e-12)  # busy a quarter

    pre, dec, prof = pools
    slow = dataclasses.replace(prof, recv_interval=10)
    load = DisaggLoad(ISL, OSL, rate=[0.05, 2.0])
    base, polled = disagg(pre, dec, prof, prof, load), disagg(pre, dec, prof, slow, load)
    rest = polled.prefill_wait_s + polled.prefill_pass_s + polled.kv_transfer_s + 1.5 * polled.tpot_s + \
        float(pre.eff.request_overhead_s)
    busy = np.minimum(polled.batch, 1.0)
    assert np.allclose(polled.ttft_s, rest + busy * 4.5 * polled.tpot_s, rtol=1e-9)
    assert polled.batch[0] < 2.0 and polled.ttft_s[0] - base.ttft_s[0] > 4.0 * float(polled.tpot_s[0]) * busy[0]
