"""Scaling laws, RL step and lifecycle optimisation: closed forms and invariants (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.arch.params import count_params
from tokenomy.catalog.loader import hardware, model
from tokenomy.econ.lifecycle import Penalties, lifecycle_costs, optimise, usd_per_flop
from tokenomy.econ.rl import RlRequest, rl_step, rollout_deployment
from tokenomy.econ.scaling import CHINCHILLA, compute_optimal, loss, overtraining_factor, tokens_for_loss


def test_chinchilla_constants_as_published():
    # Hoffmann et al. 2022 (arXiv 2203.15556) eq. 10: E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28.
    assert (CHINCHILLA.E, CHINCHILLA.A, CHINCHILLA.B, CHINCHILLA.alpha, CHINCHILLA.beta) == (
        1.69, 406.4, 410.7, 0.34, 0.28)
    # Chinchilla itself: 70B on 1.4T tokens -> 1.69 + 406.4/70e9^0.34 + 410.7/1.4e12^0.28
    assert float(loss(70e9, 1.4e12)) == pytest.approx(1.69 + 406.4 / 70e9**0.34 + 410.7 / 1.4e12**0.28)
    assert float(overtraining_factor(15.6e12, 405e9)) == pytest.approx(15.6e12 / 8.1e12)


@settings(max_examples=50, deadline=None)
@given(logc=st.floats(20, 27), f=st.floats(0.2, 5.0))
def test_compute_optimum_minimises_the_law_at_fixed_compute(logc, f):
    C = 10.0**logc
    N, D = compute_optimal(C)
    assert 6 * N * D == pytest.approx(C, rel=1e-9)
    if abs(f - 1) > 1e-3:  # any other split of the same compute has a higher loss
        assert float(loss(N * f, D / f)) > float(loss(N, D))


@settings(max_examples=50, deadline=None)
@given(logn=st.floats(8, 13), logd=st.floats(9, 15))
def test_tokens_for_loss_inverts_the_law(logn, logd):
    N, D = 10.0**logn, 10.0**logd
    assert float(tokens_for_loss(N, loss(N, D))) == pytest.approx(D, rel=1e-6)
    assert np.isinf(tokens_for_loss(N, CHINCHILLA.E + CHINCHILLA.A / N**CHINCHILLA.alpha - 1e-9))  # below the N floor


def test_lifecycle_without_inference_is_the_compute_optimum():
    # Minimising compute at a fixed loss is the dual of minimising loss at fixed compute: with no
    # inference and no RL the chosen (N, D) must be Hoffmann's compute-optimal point for its own FLOPs.
    target = float(loss(70e9, 1.4e12))
    p, _ = optimise(0.0, 1.0, target, 1.0, rl_tokens_per_pretrain_token=0.0, n_grid=np.logspace(9, 12, 30001))
    N, D = compute_optimal(6 * p.n_active * p.d_pre)
    assert float(p.n_active) == pytest.approx(float(N), rel=2e-3)
    assert float(p.usd_inf) == 0 and float(p.loss) == pytest.approx(target)


@settings(max_examples=30, deadline=None)
@given(logdemand=st.floats(3, 9), logref=st.floats(9.5, 12))
def test_more_demand_means_a_smaller_more_overtrained_model(logdemand, logref):
    target = float(loss(10**logref, 20 * 10**logref))
    lo, _ = optimise(10**logdemand, 86400 * 60, target, 1e-18)
    hi, _ = optimise(10 ** (logdemand + 1), 86400 * 60, target, 1e-18)
    assert float(hi.n_active) <= float(lo.n_active) and float(hi.overtraining) >= float(lo.overtraining)
    assert float(hi.usd_inf / hi.usd_total) >= float(lo.usd_inf / lo.usd_total)


def test_lifecycle_costs_closed_form():
    c = lifecycle_costs(1e11, 2e12, 1e12, 3e12, 2.0, Penalties(4.0, 2.0, 3.0))
    assert float(c.flops_pre) == 6 * 1e11 * 2e12
    assert float(c.flops_rl) == 4 * 1e11 * 1e12 * 2
    assert float(c.flops_inf) == 2 * 1e11 * 3e12 * 3
    assert float(c.usd_total) == pytest.approx(2 * (6 * 2e23 + 8e23 + 18e23))
    assert usd_per_flop(3600.0, 1e12, 0.5) == pytest.approx(2e-12)
    with pytest.raises(ValueError, match="rl_flops_factor"):
        Penalties(rl_flops_factor=7)


def test_rl_step_prices_rollouts_with_the_serving_engine():
    m, hw = model("llama-3.1-8b"), hardware("hgx-h100-8")
    dep = rollout_deployment(m, hw)
    r = rl_step(dep, RlRequest(rollouts=512, prompt_len=512, output_len=4096), np.array([8, 64, 256]))
    rs = np.asarray(r.rollout_s)
    assert np.all(np.diff(rs) < 0)  # bigger decode batches generate the same tokens faster
    assert np.all(np.asarray(r.efficiency_penalty) > 1)  # decode-heavy RL runs below the training MFU
    assert float(r.tokens_per_step) == 512 * (512 + 4096) and float(r.generated_tokens) == 512 * 4096
    # Training on the rollouts: f · N_active · tokens at the training MFU.
    n_active = count_params(m).matmul_active  # 7.5e9: all weights but the input embedding (a gather)
    assert float(r.train_s) == pytest.approx(6 * n_active * 512 * 4608 / (8 * 989.4e12 * 0.4))
    r2 = rl_step(dep, RlRequest(rollouts=512, prompt_len=512, output_len=4096, flops_factor=2), 64)
    assert float(r2.train_flops) == pytest.approx(float(r.train_flops) / 3) and float(r2.usd) < float(r.usd[1])
    with pytest.raises(ValueError, match="flops_factor"):
        rl_step(dep, RlRequest(rollouts=1, prompt_len=1, output_len=1, flops_factor=1), 1)
