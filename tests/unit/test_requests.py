"""Request objects (answers/requests.py): built from the doors' strings, refusing bad values by the public keyword,
frozen, printing themselves on one line; the serving answers below the door take them, not loose parameters."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.answers.requests import (DeploymentRequest, EngineRequest, RunRequest, ServeRequest,
                                       WorkloadRequest)
from tokenomy.serving.workload import Lengths

SRC = Path(tk.__file__).parent


def test_a_workload_reads_the_grammar_and_prints_itself():
    w = WorkloadRequest.of({"concurrency": "1..8", "isl": "4k", "osl_dist": "uniform:100:300", "ttft_slo": 2})
    assert w.concurrency == (1.0, 2.0, 4.0, 8.0) and w.rate is None and w.closed
    assert w.isl == Lengths("fixed", 4096.0) and w.osl_mean == 200.0
    assert w.at(2).concurrency == (4.0,) and w.at(2).isl == w.isl
    text = str(w)
    assert "\n" not in text and "closed loop 1, 2, 4, 8 users" in text and "ISL fixed:4096" in text
    assert "TTFT 2 s" in text


@pytest.mark.parametrize("values, field", [
    ({"concurrency": 1, "rate": 2}, "concurrency, rate"), ({}, "concurrency, rate"), ({"rate": "1,x"}, "rate"),
    ({"rate": 1, "cache_hit": 1.0}, "cache_hit"), ({"rate": 1, "arrivals": "now"}, "arrivals"),
    ({"rate": 1, "tpot_slo": 0}, "tpot_slo"), ({"rate": 1, "isl_dist": "normal:1:2"}, "isl_dist")])
def test_a_bad_workload_is_refused_naming_its_keyword(values, field):
    with pytest.raises(ValueError) as e:
        WorkloadRequest.of(values)
    assert str(e.value).startswith(field + ":")


@pytest.mark.parametrize("values, field", [
    ({"mode": "both"}, "mode"), ({"pools": {"prefill_tp": 2}}, "prefill_tp"),
    ({"mode": "disagg", "tp": 2}, "tp"), ({"mode": "disagg", "pools": {"prefill_xp": 2}}, "pools")])
def test_a_bad_deployment_is_refused_naming_its_keyword(values, field):
    with pytest.raises(ValueError) as e:
        DeploymentRequest.of("llama-3.1-8b", "hgx-h100-8", values)
    assert str(e.value).startswith(field + ":")


def test_requests_are_frozen_and_print_one_line():
    req = ServeRequest.of("qwen3-32b", "hgx-h100-8", {"rate": "0.5,4", "tp": 4, "dp": 2, "engine": "sglang",
                                                      "max_batch": 128, "method": "simulate", "seed": 3})
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.workload.cache_hit = 0.5  # type: ignore[misc]
    text = str(req)
    assert "\n" not in text
    for part in ("qwen3-32b on hgx-h100-8", "tp4 ep1 pp1 dp2", "open loop 0.5, 4 requests/s", "sglang (max_batch 128)",
                 "simulate", "seed 3"):
        assert part in text, part
    assert str(EngineRequest()) == "vllm" and str(RunRequest()) == "analytic"


def test_tk_serve_answers_its_request():
    kw = {"concurrency": [4, 32], "isl": 2048, "osl": 256, "tp": 2, "dp": 4}
    from tokenomy.answers.workloads import serve_request

    a = tk.serve("llama-3.1-8b", "hgx-h100-8", **kw)
    b = serve_request(ServeRequest.of("llama-3.1-8b", "hgx-h100-8", kw))
    assert a.title == b.title and [r["tpot_s"] for r in a.rows()] == [r["tpot_s"] for r in b.rows()]
    assert np.all(np.diff([r["tpot_s"] for r in a.rows()]) > 0)  # more users, a longer step


SERVING = ("answers/workloads.py", "answers/serve_rows.py", "answers/disagg_plans.py", "answers/pools.py",
           "answers/serve_layout.py", "answers/plan_serving.py", "answers/requests.py", "answers/deployment_request.py",
           "answers/layout_search.py", "answers/objectives.py",
           # under them: the engine takes a Pass, the steady state its Points, the scheduler's step its loads
           "core/engine.py", "core/deployment.py", "serving/steady.py", "serving/scheduler.py",
           "serving/protocol_waves.py")
DOORS = {"answers/workloads.py:serve"}  # tk.serve's keywords are its public API: it builds the requests at once
MOST = 8


def _params(f) -> int:
    a = f.args
    return len([x for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None])


def test_the_serving_path_takes_request_objects_not_long_signatures():
    long = []
    for rel in SERVING:
        for node in ast.walk(ast.parse((SRC / rel).read_text())):
            if isinstance(node, ast.FunctionDef) and _params(node) > MOST and f"{rel}:{node.name}" not in DOORS:
                long.append((rel, node.name, _params(node)))
    assert long == []


def test_load_points_are_the_tuple_and_its_read_only_array():
    # a grid of load points is held once as floats: the request from an array equals the one from the list, its
    # tuple and its array hold the same values, the caller's array stays the caller's, and a bad value is still named
    import pickle

    grid = np.array([1, 8, 64, 512], dtype=float)
    w, same = WorkloadRequest.of({"concurrency": grid}), WorkloadRequest.of({"concurrency": [1, 8, 64, 512]})
    assert w == same and hash(w.concurrency) == hash((1.0, 8.0, 64.0, 512.0))
    assert w.concurrency == (1.0, 8.0, 64.0, 512.0) and w.U.tolist() == [1.0, 8.0, 64.0, 512.0]
    with pytest.raises(ValueError):
        w.U[0] = 2.0
    grid[0] = 3.0
    assert w.U[0] == 1.0 and w.at(2).concurrency == (64.0,) and w.at(2).U.tolist() == [64.0]
    assert pickle.loads(pickle.dumps(w)) == w
    with pytest.raises(ValueError, match="^concurrency"):
        WorkloadRequest.of({"concurrency": np.array([1.0, 0.5])})
