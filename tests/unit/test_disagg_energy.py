"""Energy of disaggregated serving (answers/energy_cols.disagg_energy over serving/disagg.py's pool busy shares).

Each pool draws its own power: the decode pool steps without pause, the prefill pool runs a pass for X·t_p/b_p of
each second and idles between. By hand from catalog/power/h100-sxm.toml and facility.toml: an idle H100 draws
PUE x (idle + host + network) all-in, a busy one at most PUE x (TDP + host + network).
"""

from __future__ import annotations

import pytest

import tokenomy as tk
from tokenomy.catalog import loader

POOLS = dict(prefill_chips=1, decode_chips=1)


def _serve(**kw):
    return tk.serve("llama-3.1-8b", "h100", mode="disagg", pools=POOLS, isl=1024, osl=512, **kw).rows()


def test_each_pool_draws_between_idle_and_tdp_and_the_prefill_pool_idles_at_low_load():
    p = loader.power("h100-sxm")
    idle, full = (p.pue * (w + p.host_w + p.network_w) for w in (p.idle_w, p.tdp_w))
    low, high = _serve(concurrency=[1, 256])
    for r in (low, high):
        for key in ("prefill_all_in_w_per_chip", "decode_all_in_w_per_chip"):
            assert idle - 1e-6 <= r[key] <= full + 1e-6, (key, r[key])
    # one user: a prefill pass every ~OSL decode steps, the pool mostly idle, within 10% of idle
    assert low["prefill_all_in_w_per_chip"] < idle * 1.10
    assert high["prefill_all_in_w_per_chip"] > low["prefill_all_in_w_per_chip"]
    assert low["decode_all_in_w_per_chip"] > low["prefill_all_in_w_per_chip"]


def test_energy_per_token_falls_with_load_and_splits_by_pool():
    rows = _serve(concurrency=[1, 16, 128])
    j = [r["j_per_output_token"] for r in rows]
    assert all(a > b for a, b in zip(j, j[1:])), j
    for r in rows:
        # InferenceX's J per output token counts both pools; the decode pool's share alone is less
        assert r["decode_j_per_output_token"] < r["j_per_output_token"]
        assert r["tokens_per_s_per_mw"] == pytest.approx(1e6 / r["j_per_token"], rel=1e-9)
        assert r["energy_usd_per_mtok_output"] < r["tco_usd_per_mtok_output"]


def test_price_and_facility_reach_disaggregated_rows():
    a = _serve(concurrency=[32])[0]
    b = _serve(concurrency=[32], usd_per_kwh=0.16, facility="colocation")[0]
    assert b["energy_usd_per_mtok_output"] == pytest.approx(2.0 * a["energy_usd_per_mtok_output"] * 1.56 / 1.10)
    assert b["j_per_output_token"] == pytest.approx(a["j_per_output_token"] * 1.56 / 1.10)


def test_disaggregated_plans_carry_energy():
    r = tk.plan("llama-3.1-8b", "h100", chips=4, mode="disagg", concurrency=[32], isl=1024, osl=512)
    row = r.rows()[0]
    assert row["j_per_output_token"] > 0 and row["tokens_per_s_per_mw"] > 0
