"""`tokenomy plan/serve --emit`: the launch blocks print after the table and travel in --json; a plan the engine
cannot run is one line, exit 2 (tests/unit/test_launch.py parses the commands against the flag tables)."""

import json

from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

R = CliRunner()
PLAN = ["plan", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--chips", "4", "--concurrency", "16"]


def test_plan_emit_prints_the_command_and_its_json():
    r = R.invoke(app, PLAN + ["--emit", "sglang"])
    assert r.exit_code == 0, r.output
    assert "python3 -m sglang.launch_server" in r.stdout and "--model-path meta-llama/Llama-3.1-8B" in r.stdout
    j = json.loads(R.invoke(app, PLAN + ["--emit", "sglang", "--json"]).stdout)
    (block,) = j["launch"]
    assert block["engine"] == "sglang" and block["argv"][:3] == ["python3", "-m", "sglang.launch_server"]
    tp = int(block["argv"][block["argv"].index("--tp-size") + 1])
    assert tp == j["best"]["tp"] * j["best"]["ep"]


def test_serve_emit_json_keeps_rows_and_adds_launch():
    r = R.invoke(app, ["serve", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--concurrency", "8",
                       "--tp", "2", "--emit", "trtllm", "--json"])
    assert r.exit_code == 0, r.output
    j = json.loads(r.stdout)
    assert j["rows"] and j["launch"][0]["argv"][0] == "trtllm-serve"
    assert "--tp_size" in j["launch"][0]["argv"]


def test_emit_refusals_exit_2_in_one_line():
    for args in (["serve", "--model", "qwen3-30b-a3b", "--hardware", "hgx-h100-8", "--concurrency", "8", "--tp", "2",
                  "--ep", "4", "--emit", "vllm"],
                 PLAN + ["--emit", "ollama"],
                 PLAN + ["--engine", "trtllm", "--emit", "vllm"]):
        r = R.invoke(app, args)
        assert r.exit_code == 2, r.output
        lines = [x for x in r.output.splitlines() if x.strip()]
        assert len(lines) == 1 and "--emit:" in lines[0], r.output
