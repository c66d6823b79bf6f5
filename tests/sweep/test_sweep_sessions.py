"""Session sweeps at both doors (issue 28 Deliver 6): NVMe capacity, DRAM capacity and think time are axes of
tk.sweep(workload=...) and of tokenomy sweep --workload, in tk.sweep's signature, and bad input is refused naming
the field (a raw TypeError before)."""

import inspect

import pytest
from cli_runner import CliRunner

import tokenomy as tk
from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

R = CliRunner()
M, H = "llama-3.1-8b", "hgx-h100-8"


def test_nvme_is_an_axis_and_pays_where_hbm_runs_short():
    ds = tk.sweep(M, H, tp=1, dp=8, workload="multiturn", concurrency=[2048], think_s=[5], dram_bytes=[0],
                  kv_tiering="lmcache", nvme_bytes=[0, 1e12])
    assert dict(ds.sizes) == {"concurrency": 1, "think_s": 1, "dram_bytes": 1, "nvme_bytes": 2}
    h = ds.hit_rate.sel(concurrency=2048, think_s=5, dram_bytes=0)
    assert float(h.sel(nvme_bytes=1e12)) > float(h.sel(nvme_bytes=0)) + 0.2


def test_the_session_keys_are_in_the_signature():
    names = inspect.signature(tk.sweep).parameters
    for k in ("workload", "turns", "think_s", "kv_tiering", "dram_bytes", "nvme_bytes"):
        assert k in names


@pytest.mark.parametrize("kw,words", [
    (dict(workload="agentic", nvme_bytes=[0, 1e12]), "concurrency, rate: give one"),
    (dict(think_s=[1, 2]), "think_s: an axis of a session sweep"),
    (dict(workload="agentic", concurrency=[8], kv_tiering="lmcache", nvme_bytes=[-5]), "nvme_bytes: -5"),
    (dict(workload="agentic", concurrency=[8], dram_bytes="abc"), "dram_bytes: 'abc'"),
    # a pass axis or setting the session sweep would drop unread (it had answered without them, review)
    (dict(workload="agentic", concurrency=[4], batch=[1]),
     r"batch: not an axis of a session sweep \(workload='agentic'\); its axes: concurrency or rate, think_s"),
    (dict(workload="multiturn", concurrency=[4], efficiency="roofline"), "efficiency: not an axis of a session"),
    (dict(workload="agentic", concurrency=[4], client=object()), "^client: a session sweep .* not on a dask"),
])
def test_tk_refuses_by_name(kw, words):
    with pytest.raises(ValueError, match=words):
        tk.sweep(M, H, **kw)


def test_the_cli_sweeps_sessions_over_think_time_and_nvme(tmp_path):
    out = tmp_path / "s.csv"
    r = R.invoke(app, ["sweep", "--model", M, "--hardware", H, "--workload", "agentic", "--concurrency", "8",
                       "--think-s", "2,8", "--kv-tiering", "lmcache", "--nvme-bytes", "0,1e12", "--out", str(out)])
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()
    assert lines[0].startswith("concurrency,think_s,dram_bytes,nvme_bytes,hit_rate") and len(lines) == 1 + 4


@pytest.mark.parametrize("args,words", [
    (["--think-s", "2"], "--think-s: a session sweep's axis; give --workload"),
    (["--workload", "agentic", "--concurrency", "8", "--kv-tiering", "lmcache", "--nvme-bytes", "-5"],
     "--nvme-bytes: -5 is out of range"),
    (["--workload", "agentic", "--concurrency", "8", "--batch", "4"], "--batch: not an axis of a session sweep "
     "(--workload agentic); its axes: --concurrency or --rate, --think-s, --dram-bytes, --nvme-bytes (and --chips"),
    (["--workload", "agentic", "--concurrency", "8", "--think-s", "abc"], "--think-s: 'abc' is not a number"),
    (["--workload", "chat", "--concurrency", "8"], "--workload: 'chat'"),
    # the pass sweep's options, refused by tk.sweep by its keyword's name and worded as the CLI's option
    (["--workload", "agentic", "--concurrency", "8", "--vars", "step_s"], "--vars: not an axis of a session sweep"),
    (["--workload", "agentic", "--concurrency", "8", "--chunk-points", "5"], "--chunk-points: not an axis of a"),
    (["--workload", "agentic", "--concurrency", "8", "--dask", "tcp://127.0.0.1:9"],
     "--dask: a session sweep (--workload agentic) runs in this process"),
    (["--workload", "agentic", "--concurrency", "8", "--plot", "s.html"], "--plot: not with a session sweep"),
])
def test_the_cli_refuses_by_name(args, words):
    r = R.invoke(app, ["sweep", "--model", M, "--hardware", H] + args)
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and words in r.output, r.output
