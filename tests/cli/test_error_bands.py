"""Every answer row carries the error band of its regime (answers/error_bars.py): JSON fields, the CLI's
"22.1 ms (-9%/+14%)", and null with a note where no validated case is near."""

import json

import numpy as np
import pytest
from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

R = CliRunner()


def test_serve_rows_carry_the_band_in_json_and_the_table(hopper_bands):
    base = ["serve", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--concurrency", "16", "--isl", "1000",
            "--osl", "1000"]
    r = R.invoke(app, base + ["--json"])
    assert r.exit_code == 0, r.output
    row, = json.loads(r.output)
    for f in ("tpot_s", "ttft_s", "tokens_per_s_per_chip"):
        assert row[f + "_p10"] is not None and row[f + "_p10"] < row[f] < row[f + "_p90"], f
    assert row["tpot_s_p10"] == pytest.approx(row["tpot_s"] / (1 + np.percentile(hopper_bands, 90)))
    assert "chip_family=hopper" in row["error_band"] and "engine=vllm" in row["error_band"]
    lo, hi = (100 * (row["tpot_s_p" + q] / row["tpot_s"] - 1) for q in ("10", "90"))
    table = R.invoke(app, base)
    assert table.exit_code == 0, table.output
    assert f"({lo:+.0f}%/{hi:+.0f}%)" in table.output


def test_decode_rows_carry_the_band_and_a_far_batch_gets_none(hopper_bands):
    r = R.invoke(app, ["decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "8,2048", "--context", "128",
                       "--json"])
    assert r.exit_code == 0, r.output
    near, far = json.loads(r.output)
    assert near["step_s_p10"] < near["step_s"] < near["step_s_p90"] and "engine" not in near["error_band"]
    assert far["step_s_p10"] is None and far["error_band"] is None
    assert far["error_band_note"].startswith("no validated case near this configuration (")


def test_a_chip_family_never_measured_gets_no_band(hopper_bands):
    r = R.invoke(app, ["decode", "--model", "llama-3.1-8b", "--hardware", "mi355x", "--batch", "8", "--json"])
    assert r.exit_code == 0, r.output
    row, = json.loads(r.output)
    assert row["step_s_p10"] is None and row["tokens_per_s_per_chip_p90"] is None
    assert "cdna4" in row["error_band_note"]


def test_a_sweep_carries_the_bands_decode_and_serve_give(hopper_bands):
    import tokenomy as tk

    ds = tk.sweep(model="llama-3.1-8b", hardware="h100-sxm", tp=1, batch=[8, 2048], context=128)
    rows = tk.decode("llama-3.1-8b", "h100-sxm", tp=1, batch=[8, 2048], context=128).rows()
    for i, r in enumerate(rows):
        for k in ("step_s_p10", "step_s_p90", "tokens_per_s_per_chip_p90"):
            got = float(ds[k].values.ravel()[i])
            assert (r[k] is None and np.isnan(got)) or got == pytest.approx(r[k], rel=1e-9), (k, r[k], got)
    assert rows[0]["step_s_p10"] is not None and rows[1]["step_s_p10"] is None
    ds = tk.sweep(model="llama-3.1-8b", hardware="h100-sxm", tp=1, concurrency=[16], isl=1000, osl=1000)
    row, = tk.serve("llama-3.1-8b", "h100-sxm", tp=1, concurrency=16, isl=1000, osl=1000).rows()
    for k in ("ttft_s_p10", "tpot_s_p90", "tokens_per_s_per_chip_p10"):
        assert float(ds[k].values.ravel()[0]) == pytest.approx(row[k], rel=1e-6), k
