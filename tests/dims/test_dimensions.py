"""Dimensional analysis: the engine run on pint quantities with bytes, FLOPs, seconds and tokens as
independent dimensions (a test-only registry). A formula that adds bytes to FLOPs or divides the wrong
way raises DimensionalityError or yields the wrong unit."""

import dataclasses

import numpy as np
import pint
import pytest

from tokenomy.catalog.loader import model
from tokenomy.core.coeffs import coefficients
from tokenomy.core.roofline import HwCoeffs, step

ureg = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
ureg.define("byte_ = [information_]")
ureg.define("flop = [work_]")
ureg.define("token = [token_]")
ureg.define("dollar = [money_]")
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
    "act_elems_per_token": "elem/token", "act_peak_elems_per_token": "elem/token",
}


def _with_units(c):
    return dataclasses.replace(c, **{k: ureg.Quantity(getattr(c, k), u) for k, u in UNITS.items()})


@pytest.mark.parametrize("name", ["llama-3.1-70b", "deepseek-v3", "gpt-oss-120b"])
def test_step_is_dimensionally_consistent(name):
    c = _with_units(coefficients(model(name)))
    hw = HwCoeffs(ureg.Quantity(1e15, "flop/s"), ureg.Quantity(3e12, "byte_/s"), ureg.Quantity(1e12, "byte_"))
    B = ureg.Quantity(np.array([1.0, 64.0]), "")  # sequences: a count
    C = ureg.Quantity(4096.0, "token")
    S = ureg.Quantity(1.0, "token")
    s = step(c, hw, B, C, S, 8, kv_bytes_per_elem=ureg.Quantity(2, "byte_/elem"),
             act_bytes_per_elem=ureg.Quantity(2, "byte_/elem"), weight_bytes_per_param=None)
    assert s.compute_s.check("[time]") and s.memory_s.check("[time]") and s.step_s.check("[time]")
    assert s.flops.check("[work_]") and s.weight_bytes.check("[information_]")
    assert s.kv_read_bytes.check("[information_]") and s.memory_per_chip_bytes.check("[information_]")
    assert s.tokens_per_s.check("[token_] / [time]")
    assert s.mfu.dimensionless


def test_wrong_units_are_caught():
    c = dataclasses.replace(_with_units(coefficients(model("llama-3.1-8b"))),
                            kv_global=ureg.Quantity(1.0, "flop/token"))  # KV in FLOPs: nonsense
    hw = HwCoeffs(ureg.Quantity(1e15, "flop/s"), ureg.Quantity(3e12, "byte_/s"), ureg.Quantity(1e12, "byte_"))
    with pytest.raises(pint.DimensionalityError):
        step(c, hw, ureg.Quantity(1.0, ""), ureg.Quantity(8.0, "token"), ureg.Quantity(1.0, "token"), 1,
             kv_bytes_per_elem=ureg.Quantity(2, "byte_/elem"), act_bytes_per_elem=ureg.Quantity(2, "byte_/elem"))
