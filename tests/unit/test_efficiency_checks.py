"""An efficiency set refuses a number outside its range with one line naming the field, whether the set is built
or a field is set on a copy (``with_`` checks the fields it sets; the others were checked when the set was built)."""

import numpy as np
import pytest

from tokenomy.core.efficiency import ROOFLINE, Efficiency

BAD = [("flops_fraction", 0.0), ("hbm_fraction", 1.5), ("kv_hbm_fraction", -0.1), ("nccl_link_fraction", 2.0),
       ("overlap_loss", -0.5), ("host_overlap", 1.01), ("ep_sm_low_latency", np.array([0.2, 1.2])),
       ("overhead_s", -1e-3), ("gemm_half_tokens", np.inf), ("allreduce_latency_s", np.nan),
       ("request_overhead_s", float("nan"))]


@pytest.mark.parametrize("field,value", BAD)
def test_a_bad_number_is_refused_naming_its_field_when_built_and_when_set(field, value):
    for make in (lambda: Efficiency(**{field: value}), lambda: ROOFLINE.with_(**{field: value})):
        with pytest.raises(ValueError, match=rf"^{field}: must be "):
            make()


def test_a_copy_with_fields_set_equals_the_set_built_with_them():
    kw = dict(host_overlap=np.array([0.0, 1.0]), ep_overlap=1.0, ep_sm_normal=0.15, kv_hbm_fraction=None,
              allreduce_latency_s=None)
    base = Efficiency(flops_fraction=0.7, hbm_fraction=0.8, overhead_s=2e-3, name="custom")
    a, b = base.with_(**kw), Efficiency(flops_fraction=0.7, hbm_fraction=0.8, overhead_s=2e-3, name="custom", **kw)
    for f in ("flops_fraction", "hbm_fraction", "overhead_s", "name", *kw):
        assert np.array_equal(getattr(a, f), getattr(b, f)) if getattr(b, f) is not None else getattr(a, f) is None
    assert base.host_overlap == 0.0  # the original is untouched


def test_an_unknown_field_is_refused():
    with pytest.raises(TypeError, match="no field 'flops'"):
        ROOFLINE.with_(flops=0.5)
