"""tk.sweep(client=...): the same chunks on a dask.distributed cluster of 2 worker processes give the in-process
numbers bit for bit (Dataset and streamed file)."""

from __future__ import annotations

import distributed
import numpy as np
import pandas as pd
import pytest

from tokenomy.answers.sweeps import sweep

KW = dict(model=["llama-3.1-8b", "qwen3-30b-a3b"], hardware="hgx-h100-8", tp=[1, 2, 4], ep=[1, 2],
          batch=[1, 8, 64, 512], context=[2048, 32768], chunk_points=6)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def test_dask_dataset_is_bit_identical(client):
    here, there = sweep(**KW), sweep(**KW, client=client)
    assert set(here.data_vars) == set(there.data_vars)
    for k in here.data_vars:
        np.testing.assert_array_equal(here[k].values, there[k].values)
    assert (here.reason != 0).any() and (here.reason == 0).any()
    workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2  # two worker processes


def test_dask_plan_and_serving_match(client):
    plan = dict(model="qwen3-30b-a3b", hardware="hgx-h100-8", batch=[1, 64], context=[4096, 65536], chunk_points=1)
    a, b = sweep(**plan), sweep(**plan, client=client)
    for k in a.data_vars:
        np.testing.assert_array_equal(a[k].values, b[k].values)
    srv = dict(model="llama-3.1-8b", hardware="h100-sxm", concurrency=[1, 16, 128], isl=[512, 2048], osl=256,
               chunk_points=2)
    a, b = sweep(**srv), sweep(**srv, client=client)
    for k in a.data_vars:
        np.testing.assert_array_equal(a[k].values, b[k].values)


def test_dask_streams_the_same_file(client, tmp_path):
    p1, p2 = sweep(**KW, out=tmp_path / "a.parquet"), sweep(**KW, out=tmp_path / "b.parquet", client=client)
    pd.testing.assert_frame_equal(pd.read_parquet(p1), pd.read_parquet(p2))
