"""Dimensional analysis: the pass engine (core/engine.py) run on pint quantities with bytes, FLOPs, seconds and
tokens as independent dimensions (a test-only registry). A formula that adds bytes to FLOPs or divides the wrong
way raises DimensionalityError or yields the wrong unit.

The engine does not take quantities yet: it casts every input with ``np.asarray(x, dtype=float64)`` (``_f``), mixes
unit-less literals into ``np.where``/``np.maximum`` (``np.where(pp > 1, hop, 0.0)``, ``nan`` masks added to times) and
uses counts (tokens) as exponents in the balls-in-bins expert load. The changes it needs: ``_f`` passing quantities
through, zero/NaN masks built as ``x * 0`` of the same unit, and the token count stripped to its magnitude where
it is an exponent. Until then the test below is a strict xfail: it starts failing (XPASS) the day the engine
accepts quantities, and then the marker goes.
"""

import dataclasses

import numpy as np
import pint
import pytest

from tokenomy.catalog.loader import hardware, model
from tokenomy.core import engine
from tokenomy.core.coeffs import shape_of
from tokenomy.core.layout import Layout

ureg = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
ureg.define("byte_ = [information_]")
ureg.define("flop = [work_]")
ureg.define("token = [token_]")
ureg.define("param = [param_]")
ureg.define("elem = [elem_]")

UNITS = {  # the unit of each ModelCoeffs field
    "dense_params": "param", "head_params": "param", "capacity_dense_params": "param",
    "capacity_embed_params": "param", "capacity_expert_params": "param", "expert_params": "param",
    "dense_w": "byte_/param", "embed_w": "byte_/param", "expert_w": "byte_/param",
    "matmul_flops_per_token": "flop/token", "moe_layers": "", "num_experts": "", "experts_per_tok": "",
    "kv_global": "elem/token", "kv_local": "elem/token", "window": "token",
    "score_global_decode": "flop/token**2", "score_global_prefill": "flop/token**2",
    "score_local_decode": "flop/token**2", "score_local_prefill": "flop/token**2",
    "unabsorb_global": "flop/token", "unabsorb_local": "flop/token",
    "act_elems_per_token": "elem/token", "act_peak_elems_per_token": "elem/token",
}


def _shape(name):
    s = shape_of(model(name))
    c = dataclasses.replace(s.coeffs, **{k: ureg.Quantity(getattr(s.coeffs, k), u) for k, u in UNITS.items()})
    return dataclasses.replace(s, coeffs=c, dense_flops_per_token=ureg.Quantity(s.dense_flops_per_token, "flop/token"))


@pytest.mark.xfail(strict=True, raises=(pint.DimensionalityError, TypeError, ValueError),
                   reason="core.engine casts to float64 and mixes unit-less masks (see the module docstring)")
@pytest.mark.parametrize("name", ["llama-3.1-70b", "deepseek-v3"])
def test_engine_is_dimensionally_consistent(name):
    peaks = engine.Peaks(ureg.Quantity(1e15, "flop/s"), ureg.Quantity(3e12, "byte_/s"), ureg.Quantity(1e12, "byte_"))
    prec = engine.Precision(*(ureg.Quantity(2.0, "byte_/param"),) * 3, kv=ureg.Quantity(2.0, "byte_/elem"),
                            act=ureg.Quantity(2.0, "byte_/elem"))
    r = engine.evaluate(_shape(name), hardware("hgx-h100-8").topology, peaks, Layout(tp=8),
                        ureg.Quantity(np.array([1.0, 64.0]), ""), ureg.Quantity(4096.0, "token"),
                        ureg.Quantity(1.0, "token"), precision=prec)
    assert r.compute_s.check("[time]") and r.memory_s.check("[time]") and r.step_s.check("[time]")
    assert r.flops.check("[work_]") and r.memory_per_chip_bytes.check("[information_]")
    assert r.tokens_per_s.check("[token_] / [time]") and r.mfu.dimensionless
