"""The power model (econ/energy.py) and the energy columns of decode, prefill and serve (answers/energy_cols.py).

Closed forms checked by hand: at no load a board draws its idle power, a step busy in its GEMMs throughout reaches
the TDP and no further; all-in = PUE x (board + host + network). Invariants from the terms: energy per token falls
with batch (the weights are read once for more tokens) and rises with context (more KV read per token). The
published anchor: ML.ENERGY's measured Llama 3.1 8B on one H100 (catalog/validation/energy/ml-energy-llama31-h100
.toml, from https://ml.energy/blog/measurement/energy/llm-inference-energy-a-longitudinal-analysis).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.catalog import loader
from tokenomy.econ import energy as en
from tokenomy.econ import tco


@pytest.fixture(scope="module")
def h100():
    return loader.power("h100-sxm")


def test_board_power_bounds_by_hand(h100):
    assert float(en.board_w(h100, 0.0, 0.0, 0.0)) == pytest.approx(75.0)  # catalog/power/h100-sxm.toml idle_w
    assert float(en.board_w(h100, 1.0, 0.0, 0.0)) == pytest.approx(700.0)  # a = 1: GEMM-busy = TDP
    assert float(en.board_w(h100, 1.0, 1.0, 1.0)) == pytest.approx(700.0)  # capped at the TDP
    # a memory-bound step: 75 + e·BW·u = 75 + 117e-12 J/B x 3.35e12 B/s x 0.5 = 75 + 196 W
    p = replace(h100, hbm_j_per_byte=117e-12)
    assert float(en.board_w(p, 0.0, 0.5, 0.0)) == pytest.approx(75.0 + 117e-12 * 3.35e12 * 0.5)


def test_all_in_and_tco_by_hand(h100):
    p = replace(h100, pue=1.2, host_w=500.0, network_w=100.0, usd_per_kwh=0.1, capex_usd_per_chip=35040.0,
                amortisation_years=4.0, hosting_usd_per_kw_month=100.0)
    assert float(en.all_in_w(p, 400.0)) == pytest.approx(1.2 * 1000.0)
    # capex 35,040 / (4 x 8,760) = 1.0 $/h; hosting 100 x 12 / 8,760 x 1.3 kW = 0.17808; energy 1.2 kW x 0.1 = 0.12
    assert float(tco.usd_per_chip_hour(p, 1200.0)) == pytest.approx(1.0 + 100 * 12 / 8760 * 1.3 + 0.12)


def test_decode_energy_per_token_falls_with_batch_and_rises_with_context():
    by_batch = tk.decode("llama-3.1-8b", "h100", batch=[1, 4, 16, 64, 256], context=[2048]).rows()
    j = [r["j_per_token_all_in"] for r in by_batch]
    assert all(a > b for a, b in zip(j, j[1:])), j
    assert all(r["board_w_per_chip"] <= 700.0 + 1e-9 for r in by_batch)
    by_ctx = tk.decode("llama-3.1-8b", "h100", batch=[8], context=[1024, 4096, 16384, 65536]).rows()
    j = [r["j_per_token_board"] for r in by_ctx]
    assert all(a < b for a, b in zip(j, j[1:])), j


def test_prefill_runs_hotter_than_decode():
    pre = tk.prefill("llama-3.1-8b", "h100", batch=[4], context=[4096]).rows()[0]
    dec = tk.decode("llama-3.1-8b", "h100", batch=[4], context=[4096]).rows()[0]
    assert pre["board_w_per_chip"] > dec["board_w_per_chip"]
    assert pre["j_per_token_board"] < dec["j_per_token_board"]  # a prompt token shares its weight read


def _measured_8b_h100():
    data = loader.read_toml("validation/energy", "ml-energy-llama31-h100")
    return {c["concurrency"]: c["j_per_output_token"] for c in data["case"] if c["model"] == "llama-3.1-8b"}


def test_llama_8b_on_one_h100_under_load_lands_in_the_published_range():
    measured = _measured_8b_h100()  # ML.ENERGY v3, vLLM 0.11.1, batch 16..768: 0.07..0.26 J per output token
    lo, hi = min(measured.values()), max(measured.values())
    rows = tk.serve("llama-3.1-8b", "h100", concurrency=[16, 32, 64], isl=200, osl=717).rows()
    for r in rows:
        assert lo <= r["j_per_output_token_board"] <= hi, (r["concurrency"], r["j_per_output_token_board"])
        assert r["j_per_output_token"] > r["j_per_output_token_board"]  # all-in adds host, network, PUE
        assert r["tokens_per_s_per_mw"] == pytest.approx(
            1e6 / r["j_per_token"], rel=1e-9)  # InferenceX: total tokens per all-in MW


def test_serve_rows_carry_inferencex_names_and_tco_beside_rental():
    r = tk.serve("llama-3.1-8b", "h100", concurrency=[64], isl=1024, osl=256).rows()[0]
    assert r["interactivity"] == pytest.approx(1.0 / r["tpot_s"])
    assert r["total_tokens_per_s_per_chip"] > r["tokens_per_s_per_chip"]  # input + output vs output
    for key in ("tco_usd_per_mtok_output", "energy_usd_per_mtok_output", "usd_per_mtok_output"):
        assert r[key] > 0
    assert r["energy_usd_per_mtok_output"] < r["tco_usd_per_mtok_output"]


def test_price_and_facility_change_what_they_should():
    a = tk.decode("llama-3.1-8b", "h100", batch=[64], context=[2048]).rows()[0]
    b = tk.decode("llama-3.1-8b", "h100", batch=[64], context=[2048], usd_per_kwh=0.16).rows()[0]
    c = tk.decode("llama-3.1-8b", "h100", batch=[64], context=[2048], facility="colocation").rows()[0]
    assert b["energy_usd_per_mtok"] == pytest.approx(2.0 * a["energy_usd_per_mtok"])  # default $0.08/kWh
    assert b["j_per_token_all_in"] == pytest.approx(a["j_per_token_all_in"])
    assert c["j_per_token_all_in"] == pytest.approx(a["j_per_token_all_in"] * 1.56 / 1.10)
    assert c["j_per_token_board"] == pytest.approx(a["j_per_token_board"])


@pytest.mark.parametrize("kw, field", [({"usd_per_kwh": -1}, "usd_per_kwh"), ({"facility": "moon"}, "facility")])
def test_bad_energy_inputs_name_the_field(kw, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        tk.decode("llama-3.1-8b", "h100", batch=[1], context=[1024], **kw)


def test_every_chip_has_a_sourced_power_file():
    for chip in loader.chip_names():
        p = loader.power(chip)
        assert 0 < p.idle_w < p.tdp_w and p.capex_usd_per_chip > 0 and p.pue >= 1.0
    assert np.isclose(loader.power("gb200").capex_usd_per_chip, 5e6 / 72, rtol=1e-4)  # NVIDIA's $5M per NVL72


def test_web_choices_are_the_catalogs_and_the_objectives():
    from tokenomy.answers.objectives import PLAN_OBJECTIVES as OBJECTIVES
    from tokenomy.web.params import CHOICES

    assert tuple(CHOICES["facility"]) == tuple(loader.facility_classes())
    assert tuple(CHOICES["objective"]) == tuple(OBJECTIVES)


def test_plan_objectives_rank_by_their_own_value():
    kw = dict(concurrency=[16, 64], isl=1024, osl=256, tpot_slo=0.05)
    for name, key in (("tokens-per-joule", "goodput_tokens_per_joule"), ("tco", "goodput_requests_per_usd_tco"),
                      ("goodput-per-usd", "goodput_requests_per_usd")):
        r = tk.plan("llama-3.1-70b", "hgx-h100-8", objective=name, **kw)
        best, rows = r.extra["best"], r.rows()
        assert best is not None and best[key] == max(x[key] for x in rows if x["meets_slos"])
        assert best[key] > 0
    with pytest.raises(ValueError, match="^objective: "):
        tk.plan("llama-3.1-70b", "hgx-h100-8", objective="tco")  # the bare search ranks by its own rule


def test_train_and_lifecycle_energy():
    row = tk.train(model="llama-3.1-8b", hardware="h100", chips=64, tokens=1e12).rows()[0]
    # MWh = days x 24 h x chips x all-in kW / 1000
    assert row["mwh_all_in"] == pytest.approx(row["days"] * 24 * 64 * row["all_in_w_per_chip"] / 1e6)
    lc = tk.lifecycle().rows()[0]
    for stage in ("pretraining", "rl", "inference"):  # one power per chip-hour: MWh splits as the FLOPs and the $
        assert lc[f"{stage}_mwh"] / lc["total_mwh"] == pytest.approx(lc[f"{stage}_fraction"])
