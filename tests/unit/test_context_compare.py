"""tokenomy context --compare / answers.context_compare: the bytes per sequence the engine's cache terms give against
the arch-level sum, linear state, DeepSeek-V4 vs V3.2 at 1M, the fit vs HBM capacity, the CLI's --json and its
bad input."""

from __future__ import annotations

import json

import pytest
from cli_runner import CliRunner

from tokenomy.answers import architectures as cc
from tokenomy.answers.economics import deployment_request, serving
from tokenomy.arch.params import kv_bytes_at_context, state_bytes_per_sequence
from tokenomy.catalog import loader
import tokenomy.cli.commands  # noqa: F401  (registers every command)
from tokenomy.cli.app import app
from tokenomy.formatting import to_json

runner = CliRunner()
KINDS = ("deepseek-v4-pro", "deepseek-v3.2", "qwen3.5-397b-a17b", "kimi-k3", "llama-3.1-405b",
         "llama-4-maverick", "nemotron-3-super", "mimo-v2-flash")


@pytest.fixture(scope="module")
def four():
    return cc.context_compare(models=["deepseek-v4-pro", "qwen3.5-397b-a17b", "kimi-k3", "llama-3.1-405b"],
                              hardware="gb200-nvl72")


@pytest.mark.parametrize("name", KINDS)
@pytest.mark.parametrize("kv_dtype", ["bf16", "fp8"])
def test_bytes_per_sequence_equal_the_arch_sum(name, kv_dtype):
    m = loader.model(name)
    sv = serving(deployment_request(m, "gb200-nvl72", None, {"kv_dtype": kv_dtype}), [1], [8192])
    got, state = cc.bytes_per_sequence(sv, cc.CONTEXTS)
    want = [kv_bytes_at_context(m, C, kv_dtype) + state_bytes_per_sequence(m) for C in cc.CONTEXTS]
    assert got == pytest.approx(want, rel=1e-9)
    assert state == pytest.approx(state_bytes_per_sequence(m))


def test_payload_bytes_are_the_arch_sum(four):
    for r in four.rows():
        m = loader.model(r["model"])
        for n, C in zip(cc.CONTEXT_NAMES, cc.CONTEXTS):
            assert r[f"kv_{n}_bytes"] == pytest.approx(kv_bytes_at_context(m, C) + state_bytes_per_sequence(m))


@pytest.mark.parametrize("name", ["qwen3.5-397b-a17b", "kimi-k3", "nemotron-3-super"])
def test_linear_state_does_not_grow_with_context(name):
    m = loader.model(name)
    sv = serving(deployment_request(m, "gb200-nvl72", None, {}), [1], [8192])
    got, state = cc.bytes_per_sequence(sv, cc.CONTEXTS)
    assert state > 0
    grown = [g - kv_bytes_at_context(m, C) for g, C in zip(got, cc.CONTEXTS)]  # what is not KV: the state
    assert grown == pytest.approx([state] * len(grown), rel=1e-9)


def test_v4_at_1m_is_far_below_v32():
    r = {x["model"]: x for x in cc.context_compare(models=["deepseek-v4-pro", "deepseek-v3.2"]).rows()}
    ratio = r["deepseek-v4-pro"]["kv_1m_bytes"] / r["deepseek-v3.2"]["kv_1m_bytes"]
    assert ratio < 0.2  # the V4 card: ~10 % of V3.2's KV cache at 1M


def test_max_context_monotone_in_hbm():
    rack = cc.context_compare(models=["llama-3.1-70b"], hardware="gb200-nvl72").rows()[0]
    node = cc.context_compare(models=["llama-3.1-70b"], hardware="hgx-h100-8").rows()[0]
    assert rack["max_context_batch1"] > node["max_context_batch1"] > 0


def test_max_context_is_the_edge_of_the_fit(four):
    for r in four.rows():
        sv = serving(deployment_request(r["model"], "gb200-nvl72", r["chips_batch1"], {}), [1],
                     list(cc.LAYOUT_CONTEXTS))
        C = r["max_context_batch1"]
        assert bool(sv.terms(1.0, float(C)).fits) and not bool(sv.terms(1.0, float(C + 1)).fits)


def test_verdicts(four):
    r = {x["model"]: x for x in four.rows()}
    assert r["llama-3.1-405b"]["claim"] == "holds" and r["llama-3.1-405b"]["vs_dense_gqa"] == pytest.approx(1.0)
    for name in ("qwen3.5-397b-a17b", "kimi-k3"):
        assert r[name]["claim"] == "no longer holds" and "linear" in r[name]["verdict"]
    assert r["deepseek-v4-pro"]["vs_dense_gqa"] < 0.05 and "compressed" in r["deepseek-v4-pro"]["verdict"]


def test_cli_json_is_the_payload(four):
    out = runner.invoke(app, ["context", "--compare", "deepseek-v4-pro", "qwen3.5-397b-a17b", "kimi-k3",
                              "llama-3.1-405b", "--hardware", "gb200-nvl72", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == json.loads(to_json(four.payload()))


@pytest.mark.parametrize("args", [["--compare"], ["--compare", "nonesuch"], ["--compare", "kimi-k3", "--kv-dtype", "x"],
                                  ["kimi-k3"]])
def test_bad_input_is_one_line_and_exit_2(args):
    out = runner.invoke(app, ["context", *args])
    assert out.exit_code == 2
    assert len(out.output.strip().splitlines()) == 1 and "Traceback" not in out.output


def test_single_model_context_unchanged():
    out = runner.invoke(app, ["context", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--json"])
    assert out.exit_code == 0 and "inverse" in json.loads(out.output)
