"""--out: each file format, written chunk by chunk, reads back equal to the in-memory Dataset of the same sweep."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from tokenomy.answers.sweeps import sweep

KW = dict(model=["llama-3.1-8b", "qwen3-30b-a3b"], hardware=["h100-sxm", "hgx-h100-8"], tp=[1, 2], ep=[1, 2],
          batch=[1, 16, 1024], context=[2048, 131072], chunk_points=7)


@pytest.fixture(scope="module")
def ds():
    return sweep(**KW)


def _frame(ds):
    return ds.to_dataframe().reset_index()


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_tables_read_back_equal(tmp_path, ds, suffix):
    path = sweep(**KW, out=tmp_path / f"s{suffix}")
    got = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path)
    want = _frame(ds)
    assert len(got) == ds.sizes["model"] * ds.sizes["hardware"] * 2 * 2 * 3 * 2 == len(want)
    for col in ("model", "hardware"):
        assert list(got[col].astype(str)) == list(want[col])
    for col in ("tp", "ep", "batch", "context", "step_s", "tokens_per_s_per_chip", "usd_per_mtok", "reason",
                "bound"):
        np.testing.assert_array_equal(got[col].to_numpy(float), want[col].to_numpy(float))
    assert (got["reason"] != 0).any() and (got["reason"] == 0).any()  # both kinds of point are in the file


def test_parquet_carries_units(tmp_path):
    import json

    import pyarrow.parquet as pq

    path = sweep(**KW, out=tmp_path / "s.parquet")
    meta = json.loads(pq.read_schema(path).metadata[b"tokenomy.sweep"])
    assert meta["units"]["step_s"] == "s" and meta["reasons"][9] == "does not fit in HBM"


def test_parquet_dictionaries_only_for_the_text_axes(tmp_path):
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(sweep(**KW, out=tmp_path / "s.parquet")).metadata.row_group(0)
    enc = {meta.column(i).path_in_schema: set(meta.column(i).encodings) for i in range(meta.num_columns)}
    dictionary = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    assert enc["model"] & dictionary and enc["hardware"] & dictionary
    for col in ("batch", "context", "step_s", "usd_per_mtok"):
        assert not enc[col] & dictionary, (col, enc[col])
    # min/max statistics on the numbers (a reader filtering by context skips row groups), not on the text axes
    stats = {meta.column(i).path_in_schema: meta.column(i).statistics for i in range(meta.num_columns)}
    assert stats["model"] is None and stats["hardware"] is None
    assert stats["context"].has_min_max and stats["context"].min == min(KW["context"])


def test_netcdf_reads_back_equal(tmp_path, ds):
    path = sweep(**KW, out=tmp_path / "s.nc")
    with xr.open_dataset(path, engine="h5netcdf") as got:
        assert got.step_s.dims == ds.step_s.dims and got.step_s.attrs["units"] == "s"
        assert list(got.model.values) == list(ds.model.values)
        for k in ds.data_vars:
            np.testing.assert_array_equal(got[k].values, ds[k].values)


def test_too_big_for_memory_asks_for_out():
    with pytest.raises(ValueError, match="^out: a sweep of"):
        sweep(model="llama-3.1-8b", hardware="h100-sxm", tp=1, batch=list(range(1, 10_001)),
              context=list(range(1, 4_001)))
