"""The reversible benchmark's harness, run end to end at a tiny size (no timing asserted)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_worker_env_sets_the_allocator_only_when_asked(monkeypatch):
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.check=0")  # the caller's is dropped
    bench = _load(BENCH / "reversible.py")
    keep, default = bench.worker_env("keep"), bench.worker_env("default")
    assert keep["GLIBC_TUNABLES"] == bench.MALLOC_ENV["keep"]
    assert "trim_threshold" in keep["GLIBC_TUNABLES"]
    assert "GLIBC_TUNABLES" not in default
    assert keep["PATH"] == default["PATH"]


def test_tiny_sweep_writes_both_allocator_settings(tmp_path, monkeypatch):
    """The harness end to end, its workers run in this process: the command line and the environment it gives each
    worker are what a worker process would get (the environment's allocator setting: the test above), the worker's
    main runs on that command line and its JSON line is parsed as the harness parses a process's output (a process
    per worker costs a torch import each: 8 here)."""
    bench, worker = _load(BENCH / "reversible.py"), _load(BENCH / "reversible_worker.py")
    tunables = []

    def run_worker(cmd, capture_output, text, timeout, env):
        assert cmd[:2] == [sys.executable, str(BENCH / "reversible_worker.py")] and capture_output and text
        tunables.append(env.get("GLIBC_TUNABLES"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = worker.main(cmd[2:])
        return subprocess.CompletedProcess(cmd, rc, out.getvalue(), "")

    monkeypatch.setattr(bench.subprocess, "run", run_worker)
    out = tmp_path / "results.py"
    assert bench.main(["--depths", "2", "4", "--methods", "plain", "tokenomy", "--d-stream", "32", "--heads", "2",
                       "--seq", "64", "--batch", "2", "--steps", "1", "--warmup", "1", "--rounds", "1",
                       "--out", str(out)]) == 0
    assert len(tunables) == 8 and tunables.count(bench.MALLOC_ENV["keep"]) == tunables.count(None) == 4
    res = _load(out)
    assert set(res.SUMMARY_BY_MALLOC) == {"keep", "default"}
    assert res.SUMMARY == res.SUMMARY_BY_MALLOC["keep"]  # the first setting is the headline
    for malloc, rows in res.RESULTS_BY_MALLOC.items():
        assert {(r["method"], r["depth"]) for r in rows} == {
            ("plain", 2), ("plain", 4), ("tokenomy", 2), ("tokenomy", 4)}
        for r in rows:
            assert r["malloc"] == malloc and r["minor_faults_per_step"] >= 0
            assert r["max_abs_diff_vs_plain"] < 1e-5  # the same function as the plain stack
    for summary in res.SUMMARY_BY_MALLOC.values():
        # the activation memory of the plain stack grows with depth; tokenomy's does not
        assert summary["plain"]["slope_mib_per_block"] > 0.1
        assert summary["tokenomy"]["slope_mib_per_block"] < 0.01
    assert "faults/step" in res.FAULTS_TABLE
    assert len(res.RUNS) == 2 * 2 * 2  # malloc x method x depth, one round
    for malloc, rows in res.RESULTS_BY_MALLOC.items():
        for r in rows:  # the kept result is that configuration's run
            run, = [x for x in res.RUNS
                    if (x["malloc"], x["method"], x["depth"]) == (malloc, r["method"], r["depth"])]
            assert run["cpu_s_min"] == r["cpu_s_min"]
            assert run["minor_faults_per_step"] == r["minor_faults_per_step"]
