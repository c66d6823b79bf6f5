"""serve's session keywords are one list (answers/session_request.SESSION_KEYS, from the session request's fields) that every
door reads, and the names the doors offer for a workload and a routing are the ones the serving code takes (they
were copied by hand in input_names.choices)."""

from __future__ import annotations

import inspect

import pytest
import typer.main

import tokenomy as tk
from tokenomy.answers.input_names import choices
from tokenomy.answers.session_request import SESSION_KEYS
from tokenomy.cli import app, commands  # noqa: F401  (registers every command)

M, H = "llama-3.2-1b", "h100-sxm"
VALUES = {"turns": 4, "think_s": 5.0, "kv_tiering": "lmcache", "dram_bytes": 1e9, "nvme_bytes": 1e9,
          "routing": "kv-router"}


def _cli_options(command: str) -> set[str]:
    cmd = typer.main.get_command(app).commands[command]
    return {o[2:].replace("-", "_") for p in cmd.params for o in p.opts if o.startswith("--")}


def test_every_session_key_is_a_keyword_of_serve_and_sweep_at_both_doors():
    assert set(VALUES) == set(SESSION_KEYS) - {"workload"}  # a new key gets a value here (and a door)
    serve, sweep = _cli_options("serve"), _cli_options("sweep")
    for k in SESSION_KEYS:
        assert k in inspect.signature(tk.serve).parameters and k in serve, k
        if k != "routing":  # a session sweep compares no routers
            assert k in inspect.signature(tk.sweep).parameters and k in sweep, k


@pytest.mark.parametrize("key", [k for k in SESSION_KEYS if k != "workload"])
def test_a_session_key_beside_steady_traffic_is_refused_by_its_name(key):
    with pytest.raises(ValueError, match=f"^{key}: for a session workload"):
        tk.serve(M, H, concurrency=[8], **{key: VALUES[key]})


def test_the_workloads_and_routers_the_doors_offer_are_the_serving_codes():
    from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
    from tokenomy.serving.routing import arrivals, route
    from tokenomy.serving.sessions import generate, workload_of

    offered = choices()["workload"]
    assert offered[0] == "steady" and len(offered) > 1
    for kind in offered[1:]:
        assert workload_of(kind).kind == kind
    plan = generate(workload_of("multiturn"), 4, seed=0)
    t, stack = arrivals(plan, 2, 10.0, 20.0), TierStack((TierLevel("hbm", 1e6, 0.0),))
    for router in choices()["routing"]:  # each one runs as itself (an unknown one is refused by name)
        assert route(plan, t, stack, router, (2, 1e5, 1.0, 10.0))["routing"] == router
