"""tokenomy sweep: the CLI door gives the API's numbers, writes its files and page, and refuses bad input in one
line naming the option (exit 2)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from cli_runner import CliRunner

from tokenomy.answers.passes import decode
from tokenomy.answers.workloads import serve
import tokenomy.cli.commands  # noqa: F401  (registers the commands)
from tokenomy.cli.app import app

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, ["sweep", *args])


def test_csv_points_equal_tk_decode():
    r = _run("--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--tp", "1,8", "--batch", "1..64",
             "--context", "2k,128k", "--csv")
    assert r.exit_code == 0, r.output
    from io import StringIO

    df = pd.read_csv(StringIO(r.output))
    assert len(df) == 2 * 7 * 2
    for _, row in df.sample(6, random_state=0).iterrows():
        want = decode("llama-3.1-8b", "hgx-h100-8", batch=[int(row.batch)], context=[int(row.context)],
                      tp=int(row.tp)).rows()[0]
        if want["step_s"] is None:
            assert np.isnan(row.step_s) and row.reason != 0
        else:
            np.testing.assert_allclose(row.step_s, want["step_s"], rtol=1e-12)


def test_out_and_plot_for_a_pass_sweep(tmp_path):
    out, page = tmp_path / "s.parquet", tmp_path / "s.html"
    r = _run("--model", "llama-3.1-70b,qwen3-30b-a3b", "--hardware", "hgx-h100-8", "--batch", "1..1024",
             "--context", "8k", "--out", str(out), "--plot", str(page), "--chunk-points", "5")
    assert r.exit_code == 0, r.output
    assert "22 points" in r.output and f"written: {out}" in r.output
    assert len(pd.read_parquet(out)) == 22
    html = page.read_text().replace("\\u002f", "/")  # plotly escapes "/" in its JSON
    assert 'src="http' not in html and "plotly.js" in html.lower()  # offline: plotly.js inlined, no CDN script
    figs = re.findall(r'"name":"([^"]+)"', html)
    assert "llama-3.1-70b on hgx-h100-8" in figs and "qwen3-30b-a3b on hgx-h100-8" in figs
    assert any(f.startswith("binding: ") for f in figs)
    assert "tokens/s per user" in html and "tokens/s per chip" in html


def test_plot_for_a_serving_sweep_is_cost_vs_ttft(tmp_path):
    page = tmp_path / "serve.html"
    r = _run("--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--concurrency", "1,8,64", "--isl", "1k,4k",
             "--osl", "512", "--plot", str(page))
    assert r.exit_code == 0, r.output
    html = page.read_text().replace("\\u002f", "/")  # plotly escapes "/" in its JSON
    assert "TTFT (s)" in html and "$ per million output tokens" in html
    served = [r["ttft_s"] for isl in (1024, 4096)
              for r in serve("llama-3.1-8b", "h100-sxm", concurrency=[1, 8, 64], isl=isl, osl=512).rows()]
    front = [float(x) for x in re.search(r'"x":\[([^\]]*)\]', html).group(1).split(",")]
    assert front and all(any(abs(t - s) <= 1e-9 * s for s in served) for t in front)  # front points are served points


@pytest.mark.parametrize("args, option", [
    (["--colour", "red"], "--colour"),
    (["--batch", ""], "--batch"),
    (["--batch", "0,4"], "--batch"),
    (["--kind", "train"], "--kind"),
    (["--kv-dtype", "fp7"], "--kv-dtype"),
    (["--efficiency", "best"], "--efficiency"),
    (["--tp", "2", "--chips", "8"], "--chips"),
    (["--out", "x.txt"], "--out"),
    (["--dask", "localhost:8786"], "--dask"),
    (["--concurrency", "1", "--batch", "4"], "--batch"),
    (["--chunk-points", "0"], "--chunk-points"),
])
def test_bad_input_exit_2_one_line(args, option):
    r = _run("--model", "llama-3.1-8b", "--hardware", "h100-sxm", *args)
    assert r.exit_code == 2, r.output
    err = r.output.strip()
    assert "\n" not in err and option in err and "Traceback" not in err, err
