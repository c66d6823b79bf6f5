"""A prompt prefix every running sequence shares (a session workload's system prompt) sits in the KV pool once a
replica (serving/kv_capacity.py), so steady's KV occupancy counts it once: at the KV-capacity limit the pool is full,
not over-full (it had read 1.14 with ``fits`` true, counting the prefix in every sequence)."""

from __future__ import annotations

import numpy as np

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.steady import Prefix, steady

ISL, OSL, SHARED = 4000.0, 200.0, 3500.0


def test_a_shared_prefix_is_counted_once_in_the_occupancy():
    dep = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(1))
    prof = engine_profile("vllm", 1)
    s = steady(dep, prof, isl=ISL, osl=OSL, concurrency=[2000.0], prefix=Prefix(0.0, SHARED))
    assert bool(s.fits[0]) and bool(s.capacity_limited[0])
    occ, B = float(s.kv_occupancy[0]), float(s.batch[0])
    shared = np.floor(SHARED / prof.block_size) * prof.block_size  # whole blocks
    # the pool's tokens, by hand from one unshared sequence's occupancy; then B sequences' own blocks + the prefix
    pool_tokens = (ISL + OSL / 2.0) / float(steady(dep, prof, isl=ISL, osl=OSL, concurrency=[1.0]).kv_occupancy[0])
    assert abs(occ - (B * (ISL - shared + OSL / 2.0) + shared) / pool_tokens) < 1e-9
    # counted in every sequence the same batch would overfill the pool; counted once it fits
    assert occ <= 1.0 < B * (ISL + OSL / 2.0) / pool_tokens
