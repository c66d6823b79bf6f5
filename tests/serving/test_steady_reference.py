"""The serving model's fast paths against straightforward ones: steady over arrays of workload points against
steady on each point alone, in pieces against one pass, and the scheduler's StepTimer (one lowering of the
context for every step) against step_time lowering afresh per call. The closed loop is per point, so these agree
bit for bit, NaN and the sign of zero included; the open loop's secant steps run until every point of the call
has converged (rtol 1e-10), so a point solved alone may stop a step earlier: within 1e-9 there."""

import dataclasses

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving import steady as steady_mod
from tokenomy.serving.scheduler import StepTimer, step_time
from tokenomy.serving.steady import Prefix, Sending, steady

DEPS = [("llama-3.1-70b", "hgx-h100-8", Layout(8)), ("llama-3.1-8b", "hgx-h100-8", Layout(1, dp=2)),
        ("qwen3-30b-a3b", "hgx-h100-8", Layout(1, ep=8)), ("llama-3.1-70b", "hgx-h100-8", Layout(2, pp=2, dp=2))]
RNG = np.random.default_rng(7)
N = 40
LOAD = RNG.integers(1, 700, N).astype(float)
ISL = RNG.choice([1.0, 128.0, 1024.0, 3000.0, 16384.0], N)
OSL = RNG.choice([1.0, 2.0, 64.0, 1024.0], N)
RATE = RNG.uniform(0.05, 40.0, N)


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    return bool(np.all(((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))))


def close(a, b, rel) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    with np.errstate(invalid="ignore"):
        return bool(np.all((np.isnan(a) & np.isnan(b)) | (a == b) | (np.abs(a - b) <= rel * np.abs(b))))


def _point(s, i):
    return {f.name: np.asarray(getattr(s, f.name))[i] for f in dataclasses.fields(s)}


@pytest.fixture(scope="module", params=DEPS, ids=[f"{m}-{lay.label()}" for m, _, lay in DEPS])
def dep(request):
    m, hw, lay = request.param
    return deployment(m, hw, layout=lay)


@pytest.mark.parametrize("engine_name", ["vllm", "trtllm"])
@pytest.mark.parametrize("kw", [{}, {"prefix": Prefix(0.5)}, {"sending": Sending("together")}],
                         ids=["plain", "hit", "together"])
def test_closed_loop_points_alone_are_the_array(dep, engine_name, kw):
    prof = engine_profile(engine_name, int(dep.layout.tp))
    s = steady(dep, prof, isl=ISL, osl=OSL, concurrency=LOAD, **kw)
    for i in range(N):
        one = steady(dep, prof, isl=ISL[i], osl=OSL[i], concurrency=[LOAD[i]], **kw)
        for k, v in _point(s, i).items():
            assert same(v, np.asarray(getattr(one, k))[0]), (k, i, v, getattr(one, k))


@pytest.mark.parametrize("engine_name", ["vllm", "trtllm"])
def test_closed_loop_on_one_context_points_alone_are_the_array(dep, engine_name):
    """One ISL and OSL for every point (tk.serve's grid): more points than running batches, so the decode-only
    steps are timed once per whole batch and read off (StepTimer.many), the pieces share the contexts' lowerings."""
    prof = engine_profile(engine_name, int(dep.layout.tp))
    load = np.concatenate([np.arange(1.0, 600.0), RNG.uniform(1.0, 700.0, 200)])
    s = steady(dep, prof, isl=2000.0, osl=300.0, concurrency=load, prefix=Prefix(0.2))
    for i in RNG.choice(load.size, 25, replace=False):
        one = steady(dep, prof, isl=2000.0, osl=300.0, concurrency=[load[i]], prefix=Prefix(0.2))
        for k, v in _point(s, i).items():
            assert same(v, np.asarray(getattr(one, k))[0]), (k, i, v, getattr(one, k))


def test_open_loop_points_alone_agree_to_convergence(dep):
    prof = engine_profile("vllm", int(dep.layout.tp))
    s = steady(dep, prof, isl=ISL, osl=OSL, rate=RATE)
    for i in range(N):
        one = steady(dep, prof, isl=ISL[i], osl=OSL[i], rate=[RATE[i]])
        for k, v in _point(s, i).items():
            assert close(v, np.asarray(getattr(one, k))[0], 1e-9), (k, i)


@pytest.mark.parametrize("lengths", [(ISL, OSL, LOAD, 7), (1024.0, 512.0, np.arange(1.0, 900.0), 200),
                                     (1024.0, 512.0, np.linspace(1.0, 300.0, 3000), 500)],
                         ids=["mixed", "one-context", "one-table"])
def test_pieces_are_one_pass(dep, monkeypatch, lengths):
    """"one-table": every piece reads its decode-only steps off the one table the first piece timed up to the
    grid's most running sequences (the table StepTimer.many keeps), longer than that piece's own batches."""
    isl, osl, load, piece = lengths
    prof = engine_profile("vllm", int(dep.layout.tp))
    whole = steady(dep, prof, isl=isl, osl=osl, concurrency=load, prefix=Prefix(0.25))
    monkeypatch.setattr(steady_mod, "PIECE_POINTS", piece)
    cut = steady(dep, prof, isl=isl, osl=osl, concurrency=load, prefix=Prefix(0.25))
    for f in dataclasses.fields(whole):
        assert np.shape(getattr(cut, f.name)) == np.shape(getattr(whole, f.name)), f.name
        assert same(getattr(cut, f.name), getattr(whole, f.name)), f.name


def test_step_timer_is_step_time_per_call(dep):
    """Fractional decodes (floor and ceil), some below one (the floor runs a 1-token placeholder at context 1),
    with and without prefill loads, against step_time's fresh lowering per call."""
    ctx, pctx = ISL + OSL / 2.0, np.maximum(ISL / 2.0, 1.0)
    timer = StepTimer(dep, ctx, pctx)
    n = RNG.uniform(0.0, 300.0, N)
    n[:5] = [0.0, 0.3, 1.0, 0.999, 2.5]
    with np.errstate(all="ignore"):
        for P in (np.zeros(N), RNG.uniform(0.0, 4096.0, N), np.full(N, 8192.0)):
            t, r = timer(n, P, terms=True)
            t0, r0 = step_time(dep, n, ctx, P, pctx, terms=True)
            assert same(t, t0) and same(r.bound, r0.bound) and same(r.reason, r0.reason)
