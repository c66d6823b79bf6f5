"""tk.sweep(client=...): the same chunks on a dask.distributed cluster of 2 worker processes give the in-process
numbers bit for bit (Dataset and streamed file); with a .parquet out the workers write their own parts (a folder,
one part per chunk) and the client none; the CLI's --dask with --vars and axis ranges."""

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


def test_workers_write_their_own_parts_and_the_client_none(client, tmp_path, monkeypatch):
    from tokenomy.answers import sweep_io, sweeps

    here = sweep(**KW, out=tmp_path / "one.parquet")
    # the client process cannot write a chunk: every part comes from a worker process
    monkeypatch.setattr(sweeps, "writer", lambda *a, **k: (_ for _ in ()).throw(AssertionError("client wrote")))
    folder = sweep(**KW, out=tmp_path / "parts.parquet", client=client)
    parts = sorted(folder.iterdir())
    n_chunks = len(sweeps.chunks(sweeps.spec_of({k: v for k, v in KW.items() if k != "chunk_points"},
                                                {"chunk_points": KW["chunk_points"]})))
    assert folder.is_dir() and [p.name for p in parts] == [sweep_io.part_path(folder, k).name for k in range(n_chunks)]
    pd.testing.assert_frame_equal(pd.read_parquet(here), pd.read_parquet(folder))
    with pytest.raises(ValueError, match="^out: .* exists"):
        sweep(**KW, out=folder, client=client)


def test_cli_vars_and_dask_parts_with_axis_ranges(client, tmp_path):
    from cli_runner import CliRunner

    import tokenomy.cli.commands  # noqa: F401  (registers the commands)
    from tokenomy.cli.app import app

    folder = tmp_path / "big.parquet"
    args = ["sweep", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--tp", "1,2", "--batch", "1..64",
            "--context", "1k..1M:8log", "--vars", "step_s", "--out", str(folder), "--dask",
            client.scheduler.address, "--chunk-points", "100"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    df = pd.read_parquet(folder)
    assert list(df.columns)[-2:] == ["step_s", "reason"] and "tokens_per_s_per_chip" not in df  # the axes, then --vars
    assert {"model", "tp", "batch", "context"} <= set(df.columns)
    assert len(df) == 2 * 7 * 8 and df["context"].min() == 1024 and df["context"].max() == 1 << 20
    assert f"{len(df):,} points" in r.output and len(list(folder.iterdir())) > 1
    bad = CliRunner().invoke(app, args[:-6] + ["--vars", "step_ms"])
    assert bad.exit_code == 2 and "--vars: 'step_ms'; allowed: step_s" in bad.output and len(bad.output.splitlines()) == 1
