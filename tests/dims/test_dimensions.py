"""Dimensional analysis: the pass engine (core/engine.py) run on pint quantities with bytes, FLOPs, seconds and
tokens as independent dimensions (a test-only registry). A formula that adds bytes to FLOPs or divides the wrong
way raises DimensionalityError or yields the wrong unit.

The engine has no branch for quantities (issue 27): it takes them wherever it takes numbers because numpy's ufuncs
carry them (``units.floats`` is x·1.0), zero and NaN masks are bare 0/NaN or built in the unit of what they mask,
and its dimensional literals are read from their modules, so this test gives them units as it gives the inputs
theirs: one token (``units.TOKEN``: C − S + 1 positions, a count made a pure number, tokens/TOKEN, where it is an
exponent: the balls-in-bins expert load), one second (``units.SECOND``) and a GEMM's 2 FLOPs per weight per row.
Inputs carry their units: the model's coefficients (``UNITS``), its widths (elements per token), the peaks, the
precision, the links of the topology and the time-valued efficiency terms; layout degrees, batch (sequences) and
expert counts are plain numbers.

``Efficiency.balance_rows`` (rows = peak·η·w/(2·bw·η_hbm)) takes a bare 2 FLOPs per operand element per row; the
engine-wide tests run it in a unit-carrying form (``_with_units``), and ``test_balance_rows_are_rows`` checks the
two agree in value and that the result is a number of rows. (This test found the shipped formula dividing by w
instead of multiplying: fixed, refitted.) The engine's dimensional literals (``units.TOKEN``, ``units.SECOND``, a
GEMM's 2 FLOPs per weight per row ``efficiency.FLOPS_PER_WEIGHT``) are given their units the same way.
"""

import dataclasses

import numpy as np
import pint
import pytest

from tokenomy import units as tokenomy_units
from tokenomy.catalog.loader import hardware, model
from tokenomy.core import efficiency, engine
from tokenomy.core.coeffs import shape_of
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.layout import Layout

ureg = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
ureg.define("byte_ = [information_]")
ureg.define("flop = [work_]")
ureg.define("token = [token_]")
ureg.define("param = [param_]")
ureg.define("elem = [elem_]")
Q = ureg.Quantity

UNITS = {  # the unit of each ModelCoeffs field
    "dense_params": "param", "head_params": "param", "capacity_dense_params": "param",
    "capacity_embed_params": "param", "capacity_expert_params": "param", "expert_params": "param",
    "dense_w": "byte_/param", "embed_w": "byte_/param", "expert_w": "byte_/param",
    "matmul_flops_per_token": "flop/token", "moe_layers": "", "num_experts": "", "experts_per_tok": "",
    "n_group": "", "topk_group": "",
    "attn_kv": "elem/token", "attn_window": "token", "attn_ratio": "", "attn_chunk": "token", "attn_topk": "token",
    "attn_score_absorbed": "flop/token**2", "attn_score_plain": "flop/token**2", "attn_unabsorb": "flop/token",
    "attn_index_kv": "elem/token", "attn_index_flops": "flop/token**2", "state_elems": "elem",
    "state_flops_per_token": "flop/token",
    "act_elems_per_token": "elem/token", "act_peak_elems_per_token": "elem/token",
    "dense_depth_whole": "param/elem", "dense_depth_split": "param/elem", "expert_depth_whole": "param/elem",
    "expert_depth_split": "param/elem",
}
TIMES = ("compute_s", "memory_s", "weights_read_s", "kv_s", "tp_comm_s", "ep_comm_s", "overhead_s", "hop_s",
         "step_s")
DIMS = {**{t: "[time]" for t in TIMES}, "flops": "[work_]", "attention_flops": "[work_]",
        "memory_per_chip_bytes": "[information_]", "kv_bytes_per_chip": "[information_]",
        "tokens_per_s": "[token_] / [time]", "tokens_per_s_per_user": "[token_] / [time]"}

ROOFLINE_S = ROOFLINE.with_(overhead_s=Q(0.0, "s"), kernel_overhead_s=Q(0.0, "s"))  # its zero overheads in seconds
CALIBRATED = Efficiency(flops_fraction=0.7, hbm_fraction=0.85, overhead_s=Q(2e-3, "s"),
                        kernel_overhead_s=Q(1e-5, "s"), hbm_usable_fraction=0.9, gemm_half_tokens=Q(96.0, "token"),
                        gemm_fill_steps=3.5,
                        allreduce_latency_s=Q(8e-6, "s"), link_fraction=0.8, request_overhead_s=Q(0.02, "s"),
                        name="custom")
OVERLAPPED = CALIBRATED.with_(host_overlap=1.0, ep_overlap=1.0, ep_sm_normal=0.15,
                               ep_sm_low_latency=0.35)  # overlap schedulers and two-batch overlap formed
PEAKS = engine.Peaks(Q(1e15, "flop/s"), Q(3e12, "byte_/s"), Q(1e12, "byte_"))
PRECISION = engine.Precision(*(Q(2.0, "byte_/param"),) * 3, kv=Q(2.0, "byte_/elem"), act=Q(2.0, "byte_/elem"),
                             state=Q(4.0, "byte_/elem"))
TOK = Q(1.0, "token")

CASES = {  # name: (model, hardware, layout, evaluate's keyword arguments)
    "dense tp8": ("llama-3.1-70b", "hgx-h100-8", Layout(tp=8),
                  dict(batch=np.array([1.0, 64.0]), context=4096 * TOK, len_pass=TOK)),
    "moe ep16 attn-dp redundant": ("deepseek-v3", "gb200-nvl72", Layout(ep=16, redundant_experts=16),
                                   dict(batch=np.array([16.0, 256.0]), context=8192 * TOK, len_pass=TOK)),
    "moe tp2 ep8 over racks": ("deepseek-v3", "hgx-h100-8", Layout(tp=2, ep=8, redundant_experts=32),
                               dict(batch=np.array([16.0, 256.0]), context=8192 * TOK, len_pass=TOK,
                                    prefill_tokens=512 * TOK, prefill_context=2048 * TOK)),
    "moe prefill ep32 over nodes": ("deepseek-v3", "hgx-h800-8", Layout(ep=32),  # DeepEP's normal kernels
                                    dict(batch=np.array([32.0, 64.0]), context=4096 * TOK, len_pass=4096 * TOK)),
    "pipeline pp2": ("llama-3.1-70b", "hgx-h100-8", Layout(tp=4, pp=2, kv_batch=True),
                     dict(batch=np.array([8.0, 64.0]), context=np.array([[1024.0], [32768.0]]) * TOK,
                          len_pass=TOK, hop_latency_s=Q(2e-5, "s"))),
    "prefill": ("llama-3.1-70b", "hgx-h100-8", Layout(tp=8),
                dict(batch=np.array([1.0, 4.0]), context=4096 * TOK, len_pass=4096 * TOK,
                     prefill_tokens=1024 * TOK, prefill_context=8192 * TOK, kv_read_fraction=0.5)),
}


def _shape(name):
    s = shape_of(model(name))
    c = dataclasses.replace(s.coeffs, **{k: Q(getattr(s.coeffs, k), u) for k, u in UNITS.items()})
    return dataclasses.replace(s, coeffs=c, dense_flops_per_token=Q(s.dense_flops_per_token, "flop/token"),
                               hidden_size=Q(float(s.hidden_size), "elem/token"),
                               dispatch_size=Q(float(s.dispatch_size), "elem/token"),
                               head_dim=Q(float(s.head_dim), "elem/token"))


def _topology(name):
    t = hardware(name).topology
    level = lambda lv: dataclasses.replace(lv, bytes_per_s=Q(lv.bytes_per_s, "byte_/s"),  # noqa: E731
                                           latency_s=Q(lv.latency_s, "s"))
    return dataclasses.replace(t, scale_up=level(t.scale_up), scale_out=level(t.scale_out))


def _consistent_balance_rows(self, peak_flops_per_s, hbm_bytes_per_s, operand_bytes, kv=False):
    """The balance rows in a consistent form (module docstring): 2 FLOPs per operand element (weight or KV
    element) per row."""
    per_element = Q(2.0, "flop/token") * (operand_bytes / Q(1.0, "byte_")).units
    eta = self.kv_fraction if kv else self.hbm_fraction
    return (peak_flops_per_s * self.flops_fraction * operand_bytes / (per_element * hbm_bytes_per_s * eta))


def _with_units(monkeypatch):
    """The engine's dimensional literals given their units (one token, one second, a GEMM's 2 FLOPs per weight per
    row), and the balance rows in their consistent form (module docstring)."""
    monkeypatch.setattr(tokenomy_units, "TOKEN", TOK)
    monkeypatch.setattr(tokenomy_units, "SECOND", Q(1.0, "s"))
    monkeypatch.setattr(tokenomy_units, "ELEMENT", Q(1.0, "elem"))
    monkeypatch.setattr(efficiency, "FLOPS_PER_WEIGHT", Q(2.0, "flop/(token*param)"))
    monkeypatch.setattr(Efficiency, "balance_rows", _consistent_balance_rows)


@pytest.fixture
def units(monkeypatch):
    _with_units(monkeypatch)


def _run(case, eff, peaks=PEAKS):
    name, hw, lay, kw = CASES[case]
    return engine.evaluate(_shape(name), _topology(hw), peaks, lay, PRECISION, engine.Pass(**kw), eff)


def _absent(x) -> bool:
    """A term the pass does not have (no EP dispatch on a dense model, no hop without a pipeline): the engine
    skips forming it and leaves an exact bare 0, which adds nothing in any unit."""
    return not isinstance(x, ureg.Quantity) and not np.any(x)


@pytest.mark.usefixtures("units")
@pytest.mark.parametrize("eff", [ROOFLINE_S, CALIBRATED, OVERLAPPED], ids=["roofline", "calibrated", "overlapped"])
@pytest.mark.parametrize("case", list(CASES))
def test_engine_is_dimensionally_consistent(case, eff):
    r = _run(case, eff)
    wrong = {k: str(getattr(getattr(r, k), "units", "a plain number")) for k, d in DIMS.items()
             if not (isinstance(getattr(r, k), ureg.Quantity) and getattr(r, k).check(d)) and not _absent(getattr(r, k))}
    assert not wrong, wrong
    assert isinstance(r.mfu, ureg.Quantity) and r.mfu.dimensionless
    assert r.ok.any(), "every point invalid: the case checks nothing"
    ok = r.ok
    assert np.all(np.isfinite(r.step_s.m_as("s")[ok])) and np.all(r.step_s.m_as("s")[ok] > 0)


@pytest.mark.parametrize("case", list(CASES))
def test_units_do_not_change_the_numbers(case, monkeypatch):
    """Stripped of their units (seconds, FLOPs, bytes, tokens), the quantities give the plain engine's numbers.
    (Under the roofline only: its M_½ = 0 makes the patched balance rows irrelevant.)"""
    name, hw, lay, kw = CASES[case]
    plain = {k: getattr(v, "magnitude", v) for k, v in kw.items()}
    p = engine.evaluate(shape_of(model(name)), hardware(hw).topology, engine.Peaks(1e15, 3e12, 1e12), lay,
                        engine.Precision(2.0, 2.0, 2.0), engine.Pass(**plain))
    _with_units(monkeypatch)
    r = _run(case, ROOFLINE_S)
    for k in (*DIMS, "mfu"):
        got = getattr(r, k)
        got = got.to_base_units().magnitude if isinstance(got, ureg.Quantity) else got
        np.testing.assert_allclose(got, getattr(p, k), rtol=1e-12, err_msg=k)


@pytest.mark.usefixtures("units")
def test_every_term_is_formed_with_its_unit_in_some_case():
    """The cases feed the engine what forms each term (MoE dispatch, pipeline hops, overlap), so no term escapes the
    unit check by being skipped everywhere (the engine has no branch for quantities: issue 27)."""
    formed = {k for case in CASES for eff in (CALIBRATED, OVERLAPPED)
              for k in DIMS if isinstance(getattr(_run(case, eff), k), ureg.Quantity)}
    assert formed == set(DIMS), sorted(set(DIMS) - formed)


def test_balance_rows_are_rows():
    # the shipped (bare-2) formula equals the unit-carrying one in value, and the latter is rows (tokens)
    rows = _consistent_balance_rows(ROOFLINE, PEAKS.flops_per_s, PEAKS.hbm_bytes_per_s, PRECISION.dense_w)
    assert rows.check("[token_]"), rows.units
    shipped = ROOFLINE.balance_rows(PEAKS.flops_per_s.magnitude, PEAKS.hbm_bytes_per_s.magnitude,
                                    PRECISION.dense_w.magnitude)
    assert float(shipped) == pytest.approx(float(rows.magnitude), rel=1e-12)


@pytest.mark.usefixtures("units")
@pytest.mark.parametrize("case", ["dense tp8", "moe tp2 ep8 over racks"])
def test_a_wrong_unit_fails(case):
    wrong = engine.Peaks(PEAKS.flops_per_s, Q(3e12, "flop/s"), PEAKS.hbm_bytes)  # bandwidth in FLOP/s
    with pytest.raises(pint.DimensionalityError):
        _run(case, CALIBRATED, wrong)
