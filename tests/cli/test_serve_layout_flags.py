"""serve takes every layout flag decode takes, through decode's own parsing (issue 25, item 9): the CLI (`tokenomy
serve` and each disaggregated pool's --prefill-*/--decode-*) and tk.serve take --attn-tp and --kv-batch (/api/serve:
tests/web/test_serve_layout_api.py); a layout that is not valid gets decode's reason, not "does not fit";
weight_dtype="checkpoint" is the checkpoint's own quantization in serve as in decode. Before: serve had no
--attn-tp/--kv-batch, tp 3 for Llama-3.1-70B said "does not fit ... with a KV cache for one 2048-token sequence",
and "checkpoint" was "not a dtype"."""

import json

import pytest
from typer.main import get_command
from cli_runner import CliRunner

import tokenomy as tk
from tokenomy.cli import commands  # noqa: F401  (registers every command)
from tokenomy.cli.app import app

R = CliRunner()
V3 = ["--model", "deepseek-v3", "--hardware", "hgx-h200-8"]
LAYOUT = {"--tp", "--ep", "--pp", "--dp", "--redundant-experts", "--attn-tp", "--kv-batch"}


def _flags(name: str) -> set[str]:
    cmd = get_command(app).commands[name]
    return {o for p in cmd.params if p.param_type_name == "option" for o in p.opts}


def test_serve_and_each_pool_take_every_layout_flag_decode_takes():
    assert LAYOUT <= _flags("decode")
    serve = _flags("serve")
    assert LAYOUT <= serve
    for pool in ("prefill", "decode"):
        assert {f"--{pool}-{f[2:]}" for f in LAYOUT} <= serve


def _plan(args) -> str:
    r = R.invoke(app, ["serve", *V3, "--concurrency", "64", "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)[0]["plan"]


def test_serve_kv_batch_and_attn_tp():
    assert _plan(["--tp", "8", "--kv-batch"]) == "tp8 ep1 pp1 dp1 kv-batch"
    assert _plan(["--tp", "1", "--ep", "8", "--attn-tp"]) == "tp1 ep8 pp1 dp1 attn-tp"
    assert _plan(["--tp", "1", "--ep", "8"]) == "tp1 ep8 pp1 dp1 attn-dp"


def test_disaggregated_pools_take_kv_batch_and_attn_tp():
    r = R.invoke(app, ["serve", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--mode", "disagg",
                       "--prefill-chips", "8", "--decode-chips", "8", "--prefill-tp", "1", "--prefill-ep", "8",
                       "--prefill-attn-tp", "--decode-tp", "8", "--decode-kv-batch", "--concurrency", "64", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)[0]["plan"] == "prefill tp1 ep8 pp1 dp1 attn-tp | decode tp8 ep1 pp1 dp1 kv-batch"


LLAMA_TP3 = ["--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--tp", "3", "--chips", "3"]
REASON = "the attention group (tp, or tp*ep without attn_dp) does not divide the attention heads"


def test_an_invalid_layout_gets_decodes_reason():
    dec = R.invoke(app, ["decode", *LLAMA_TP3])
    srv = R.invoke(app, ["serve", *LLAMA_TP3, "--concurrency", "8"])
    assert dec.exit_code == srv.exit_code == 2
    assert REASON in dec.output and srv.output == dec.output, (dec.output, srv.output)
    assert len(srv.output.strip().splitlines()) == 1


def test_an_invalid_pool_layout_names_the_pool():
    r = R.invoke(app, ["serve", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--mode", "disagg",
                       "--prefill-chips", "4", "--decode-chips", "3", "--decode-tp", "3", "--concurrency", "8"])
    assert r.exit_code == 2 and REASON in r.output and r.output.startswith("error: decode_tp, "), r.output


def test_tk_serve_takes_the_layout_keywords_and_checkpoint():
    row = tk.serve("deepseek-v3", "hgx-h200-8", concurrency=64, tp=8, kv_batch=True).rows()[0]
    assert row["plan"] == "tp8 ep1 pp1 dp1 kv-batch"
    own = tk.serve("llama-3.1-8b", "hgx-h100-8", concurrency=8, tp=1, dp=8, weight_dtype="checkpoint").rows()[0]
    default = tk.serve("llama-3.1-8b", "hgx-h100-8", concurrency=8, tp=1, dp=8).rows()[0]
    assert own["tpot_s"] == default["tpot_s"] and own["b_kv"] == default["b_kv"]
    with pytest.raises(ValueError, match="^tp, ep, pp, dp: .*does not divide the attention heads"):
        tk.serve("llama-3.1-70b", "hgx-h100-8", concurrency=8, tp=3)

