"""Result.to_xarray: named dimensions (model, hardware, plan, then the swept axes), units in attrs, the same numbers
as rows()."""

from __future__ import annotations

import math

import pytest

import tokenomy as tk
from tokenomy.answers.result import Result

xr = pytest.importorskip("xarray")  # the sweep extra; `make test` installs it


def test_decode_dataset_has_the_swept_axes_and_the_rows_numbers():
    r = tk.decode("llama-3.1-70b", "hgx-h100-8", batch=[1, 64], context=[2048, 32768, 131072])
    ds = r.to_xarray()
    assert dict(ds.sizes) == {"model": 1, "hardware": 1, "plan": 1, "batch": 2, "context": 3}
    assert ds.model.item() == "llama-3.1-70b" and ds.hardware.item() == "hgx-h100-8"
    assert ds.step_s.attrs["units"] == "s" and ds.tokens_per_s_per_chip.attrs["units"] == "tok/s"
    assert ds.usd_per_mtok.attrs["units"] == "USD/Mtok" and ds.memory_per_chip_bytes.attrs["units"] == "B"
    for row in r.rows():
        got = ds.step_s.sel(batch=row["batch"], context=row["context"]).item()
        assert (math.isnan(got) and row["step_s"] is None) or got == row["step_s"]
        assert ds.fits.sel(batch=row["batch"], context=row["context"]).item() == row["fits"]
    assert ds.attrs["command"] == "decode" and "layout" in ds.attrs["title"]


def test_datasets_of_two_models_combine_on_the_model_dimension():
    a = tk.decode("llama-3.1-8b", "h100-sxm", batch=[1, 8], context=[2048]).to_xarray(dims=["model", "batch", "context"])
    b = tk.decode("llama-3.1-70b", "hgx-h100-8", batch=[1, 8], context=[2048]).to_xarray(
        dims=["model", "batch", "context"])
    both = xr.concat([a, b], dim="model")
    assert list(both.model.values) == ["llama-3.1-8b", "llama-3.1-70b"] and both.step_s.shape == (2, 2, 1)


def test_open_loop_fields_are_no_dimension_and_repeats_fall_back_to_rows():
    s = tk.serve("llama-3.1-70b", "hgx-h100-8", concurrency=[1, 64]).to_xarray()
    assert "concurrency" in s.dims and "rate" not in s.dims
    rep = Result("q", "t", [{"batch": 1, "x_s": 1.0}, {"batch": 1, "x_s": 2.0}])
    ds = rep.to_xarray()
    assert dict(ds.sizes) == {"row": 2} and list(ds.batch.values) == [1, 1] and list(ds.x_s.values) == [1.0, 2.0]
    with pytest.raises(ValueError, match="^dims: rows repeat over batch"):
        rep.to_xarray(dims=["batch"])
    with pytest.raises(ValueError, match="^dims: nope not among the fields"):
        rep.to_xarray(dims=["nope"])
