"""KV-cache traffic at its own share of HBM bandwidth (Efficiency.kv_hbm_fraction, η_kv): paged attention gathers
blocks of a few KB, so it reaches less of the bandwidth than streamed weights (η_hbm). Only the KV term moves."""

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import Efficiency
from tokenomy.core.layout import Layout

BASE = dict(flops_fraction=0.8, hbm_fraction=0.9)


def run(kv):
    d = Deployment(loader.model("llama-3.1-8b"), loader.hardware("h100-sxm"), Layout(), None, "bf16",
                   Efficiency(**BASE, kv_hbm_fraction=kv))
    return d.run(batch=np.array([1.0, 16.0]), context=np.array([[1024.0], [8192.0]]))


def test_kv_share_moves_only_the_kv_term():
    same, half = run(None), run(0.45)
    np.testing.assert_array_equal(same.weights_read_s, half.weights_read_s)
    np.testing.assert_array_equal(same.act_s, half.act_s)
    np.testing.assert_allclose(half.kv_s, same.kv_s * 0.9 / 0.45, rtol=1e-12)
    assert np.all(half.step_s > same.step_s)


def test_no_kv_share_reads_kv_at_the_streaming_share():
    e = Efficiency(**BASE)
    assert e.kv_fraction == 0.9
    assert Efficiency(**BASE, kv_hbm_fraction=0.6).kv_fraction == 0.6


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan")])
def test_kv_share_outside_0_1_is_refused(bad):
    with pytest.raises(ValueError, match="kv_hbm_fraction"):
        Efficiency(**BASE, kv_hbm_fraction=bad)


def test_an_array_valued_overhead_broadcasts_against_the_grid():
    """engine._bound sets a code where a term binds; an efficiency term with its own axis must broadcast."""
    d = Deployment(loader.model("llama-3.1-8b"), loader.hardware("h100-sxm"), Layout(), None, "bf16",
                   Efficiency(**BASE, overhead_s=np.array([0.0, 1e-3, 1.0])))
    r = d.run(batch=8.0, context=1024.0)
    assert r.step_s.shape == (3,) and int(r.bound[-1]) == 3  # a 1 s overhead binds
