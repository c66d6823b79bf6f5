"""Topology levels from the catalog and alpha-beta collectives (closed forms written out independently)."""

import math
from dataclasses import replace

import numpy as np
import pytest

from tokenomy.catalog import loader
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.core import collectives as col
from tokenomy.parallel.topology import parse_torus, topology


@pytest.fixture(scope="module")
def hgx():
    return topology(loader.hardware("hgx-h100-8"))


def test_levels_from_the_catalog(hgx):
    # h100-sxm.toml: NVLink 450 GB/s per direction in an 8-GPU domain, 50 GB/s per GPU over InfiniBand.
    assert hgx.domain_size == 8 and hgx.num_chips == 8
    assert hgx.scale_up.bytes_per_s == 450e9 and hgx.scale_out.bytes_per_s == 50e9
    assert math.isinf(hgx.scale_out.chips)
    assert topology(loader.hardware("gb200-nvl72")).domain_size == 72
    assert topology(loader.hardware("h100-sxm")).domain_size == 8  # a bare chip: its own scale-up domain


def test_chips_in_domain(hgx):
    # stride 1: up to 8 share a node; stride 8 (e.g. pipeline stages of a tp8 node): every member elsewhere.
    assert list(hgx.chips_in_domain(np.array([2, 8, 16, 64]), 1)) == [2, 8, 8, 8]
    assert list(hgx.chips_in_domain(np.array([2, 4, 16]), np.array([4, 8, 2]))) == [2, 1, 4]


def test_torus_bandwidth_by_axes():
    # TPU v4 4x4x4: 270 GB/s summed over 6 links; a group filling 1, 2 or 3 axes uses 1/3, 2/3, all of it.
    t = topology(loader.hardware("tpu-v4-pod-slice-64"), torus=(4, 4, 4))
    assert list(t.up_bytes_per_s(np.array([2, 4, 16, 64]))) == pytest.approx([90e9, 90e9, 180e9, 270e9])
    assert parse_torus("4x4x4") == (4, 4, 4) and parse_torus(None) is None
    with pytest.raises(ValueError, match="torus"):
        topology(loader.hardware("tpu-v4-pod-slice-64"), torus=(4, 4, 2))
    with pytest.raises(ValueError, match="torus"):
        parse_torus("4xx")


def test_single_level_closed_forms(hgx):
    a, b, n = 3e-6, 450e9, 1e6
    # 8 GPUs: log2(8) = 3 latency steps and 7/8 of the buffer each way (Thakur et al. 2005).
    assert float(col.all_gather(hgx, 8, n)) == pytest.approx(3 * a + 7 / 8 * n / b)
    assert float(col.reduce_scatter(hgx, 8, n)) == pytest.approx(3 * a + 7 / 8 * n / b)
    # all-reduce inside the node: the fastest of the ring (2·3 latency steps), the two-shot custom all-reduce
    # (2 steps, the ring's bandwidth term) and the one-shot (1 step, every peer's whole buffer): two-shot at 1 MB
    assert float(col.ring(8, n, b, a, 2.0)) == pytest.approx(2 * (3 * a + 7 / 8 * n / b))  # NCCL's ring alone
    assert float(col.all_reduce(hgx, 8, n)) == pytest.approx(2 * a + 2 * 7 / 8 * n / b)
    assert float(col.all_reduce(hgx, 8, n)) < float(col.ring(8, n, b, a, 2.0))
    small = 1e4  # a decode-sized message: one-shot, a + 7·n/b
    assert float(col.all_reduce(hgx, 8, small)) == pytest.approx(a + 7 * small / b)
    # a TPU torus has no peer-to-peer shot: its all-reduce is the ring's
    tpu = loader.hardware("tpu-v5p-pod").topology
    up = tpu.scale_up
    assert float(col.all_reduce(tpu, 8, small)) == pytest.approx(float(col.ring(8, small, tpu.up_bytes_per_s(8),
                                                                                   up.latency_s, 2.0)))
    assert float(col.all_to_all(hgx, 8, n)) == pytest.approx(a + 7 / 8 * n / b)
    assert float(col.p2p(hgx, n, False)) == pytest.approx(a + n / b)
    assert float(col.p2p(hgx, n, True)) == pytest.approx(5e-6 + n / 50e9)
    for fn in col.COLLECTIVES.values():
        assert float(fn(hgx, 1, n)) == 0.0


def test_hierarchical_all_reduce(hgx):
    # 16 GPUs = 2 nodes: reduce-scatter + all-gather inside (8), all-reduce of n/8 across (2) over the NIC.
    n = 8e6
    inside = 2 * (3 * 3e-6 + 7 / 8 * n / 450e9)
    across = 2 * (1 * 5e-6 + 1 / 2 * (n / 8) / 50e9)
    assert float(col.all_reduce(hgx, 16, n)) == pytest.approx(inside + across)


def test_all_to_all_over_two_domains_is_bound_by_scale_out(hgx):
    # Half of what each GPU sends crosses the 9x slower link; that share binds.
    n = 1e8
    assert float(col.all_to_all(hgx, 16, n)) == pytest.approx(5e-6 + 0.5 * n / 50e9)
    assert float(col.all_to_all(hgx, 16, n)) > 4 * float(col.all_to_all(hgx, 8, n))


@settings(max_examples=60, deadline=None)
@given(g=st.integers(1, 512), s=st.sampled_from([1, 2, 4, 8, 16]), n=st.floats(1.0, 1e10),
       name=st.sampled_from(sorted(col.COLLECTIVES)))
def test_collectives_monotone_and_never_cheaper_across_domains(hgx, g, s, n, name):
    fn = col.COLLECTIVES[name]
    t = float(fn(hgx, g, n, s))
    assert t >= 0 and float(fn(hgx, g, 2 * n, s)) >= t
    wide = replace(hgx, scale_up=replace(hgx.scale_up, chips=4096.0))  # the same group inside one huge domain
    assert t >= float(fn(wide, g, n, s)) * (1 - 1e-12)
