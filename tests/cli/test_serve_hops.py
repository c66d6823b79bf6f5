"""The call path of `tokenomy serve --concurrency` from the CLI command to the engine: at most 6 hops (issue 27).

Every call of core.engine.times made while the command runs is traced back, frame by frame, to serve_cmd (the
function behind `tokenomy serve`); the hops are the calls between them (serve_cmd -> ... -> engine.times). With a
layout given that is the serving path (answers -> steady state -> scheduler step -> engine); with the layout searched
also the decode search that ranks the candidates and each candidate's steady state (the door runs them itself and
hands their columns to objectives.WORKLOAD's ranking)."""

import json
import sys

from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app
from tokenomy.core import engine

MOST_HOPS = 6


def _paths_to_engine(monkeypatch, args, layout=("--tp", "8")) -> list[list[str]]:
    """[the functions from engine.times's caller up to serve_cmd] for each engine.times call under serve_cmd."""
    paths, times = [], engine.times

    def traced(*a, **k):
        chain, f = [], sys._getframe(1)
        while f is not None:
            chain.append(f.f_code.co_qualname)
            if f.f_code.co_name == "serve_cmd" and f.f_code.co_filename.endswith("serve.py"):
                paths.append(chain)
                break
            f = f.f_back
        return times(*a, **k)

    monkeypatch.setattr(engine, "times", traced)
    r = CliRunner().invoke(app, ["serve", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", *layout,
                                 "--isl", "1024", "--osl", "1024", "--json", *args])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)[0]["tpot_s"] > 0
    return paths


def test_serve_concurrency_reaches_the_engine_in_at_most_six_hops(monkeypatch):
    paths = _paths_to_engine(monkeypatch, ["--concurrency", "64"])
    steady_paths = [p for p in paths if "solve" in p]  # the steady state's steps (TPOT, TTFT)
    assert steady_paths, paths
    deepest = max(paths, key=len)
    assert len(deepest) <= MOST_HOPS, " <- ".join(["engine.times", *deepest])
    assert deepest[-1] == "serve_cmd" and "serve_request" in deepest and "steady" in deepest


def test_replicas_reach_the_engine_in_the_same_hops(monkeypatch):
    """dp replicas (each replica's share of the load solved on one replica, then combined) add no frame."""
    paths = _paths_to_engine(monkeypatch, ["--concurrency", "64,5000"], layout=("--tp", "4", "--dp", "2"))
    assert any("solve" in p for p in paths)
    deepest = max(paths, key=len)
    assert len(deepest) <= MOST_HOPS, " <- ".join(["engine.times", *deepest])


def test_a_grid_of_points_reaches_the_engine_in_the_same_hops(monkeypatch):
    """Many points on one context: the decode-only steps timed once per whole batch (StepTimer.many) and the
    closed loop in pieces sharing one engine problem add no frame."""
    paths = _paths_to_engine(monkeypatch, ["--concurrency", "1..2000:1"])
    assert any("solve" in p for p in paths)
    deepest = max(paths, key=len)
    assert len(deepest) <= MOST_HOPS, " <- ".join(["engine.times", *deepest])


def test_open_loop_counts_its_fixed_point_apart(monkeypatch):
    """--rate solves the running batch by Little's law first (two more frames: the fixed point and its function);
    the steady state's own steps stay within the bound."""
    paths = _paths_to_engine(monkeypatch, ["--rate", "2"])
    outside = [p for p in paths if "_littles_law" not in p]
    assert any("solve" in p for p in outside)
    assert max(map(len, outside)) <= MOST_HOPS


def test_a_searched_layout_reaches_the_engine_in_the_same_hops(monkeypatch):
    """No layout given: the decode search (parallel.search) and every candidate's steady state within the bound."""
    paths = _paths_to_engine(monkeypatch, ["--concurrency", "64"], layout=())
    searched = [p for p in paths if "candidates" in p]  # the decode search ranking the candidates
    candidates = [p for p in paths if "solve" in p]  # the candidates' steady states (and the chosen one's)
    assert searched and len(candidates) > 2, paths  # more than one candidate evaluated
    deepest = max(paths, key=len)
    assert len(deepest) <= MOST_HOPS, " <- ".join(["engine.times", *deepest])
