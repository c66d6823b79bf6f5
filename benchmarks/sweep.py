"""Sweep speed, measured in one run (medians; ratios between lines of the same run, never absolute claims):

1. full engine: tk.sweep (the public API) on a dense-model decode grid (calibrated efficiency, real tp layouts,
   every point through core.engine.work + times in chunks) vs the same engine one configuration at a time
   (Deployment.run on scalars) vs llm-analysis 0.2.2 on the same grid, run in its own venv (benchmarks/.venv-peers,
   bash benchmarks/peers_env.sh; never a dependency of tokenomy) as a subprocess, one configuration per call. The
   three are interleaved: each of the 3 rounds times one of each, so a change of the machine's load between them
   moves all three (the medians over the rounds are quoted).
   llm-analysis needs the FFN width to be a multiple of the hidden size: its models get the next multiple (its
   cost per call does not depend on the widths). It refuses a configuration that does not fit by raising, sooner
   than it answers one that fits, and most of this grid does not fit (long contexts at large batches): the ratio
   is printed over the configurations llm-analysis answers (quoted: like for like, since the engine answers every
   point, fitting or not, at one rate) and over all of them, its early refusals included.
2. plan: Kimi-K2 on 1,152 GB200 chips (gb200-nvl72 topology), every valid layout x batch at 8k context, in process.
3. memory: peak RSS of a fresh process streaming a --rss-points sweep (default 10^9) to a temporary Parquet file
   (step_s and reason only), and of one 10x smaller, to show it does not grow with the sweep.
4. a serving plan as a CLI process against aiconfigurator 0.12.0's `cli default` on the same question, interleaved
   (its own venv: bash benchmarks/peers_env.sh; Vidur does not run offline: peers_env.sh says why).
Dask (1 vs 2 workers writing their own parts) is benchmarks/sweep_dask.py, its own entry in results.json.
Run: .venv/bin/python benchmarks/sweep.py [--quick] [--rss-points N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from results import record
from pathlib import Path

import numpy as np

import tokenomy as tk
from tokenomy.answers.resolve import efficiency_of
from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout

HERE = Path(__file__).resolve().parent
PEERS = HERE / ".venv-peers" / "bin" / "python"
DENSE = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-32b")
HARDWARE = "hgx-h100-8"
TP = (1, 2, 4, 8)


def dense_axes(n_batch: int, n_context: int) -> dict:
    return dict(model=list(DENSE), hardware=HARDWARE, tp=list(TP), batch=list(range(1, n_batch + 1)),
                context=[int(x) for x in np.unique(np.geomspace(1024, 1 << 20, n_context).round())])


def timed(fn, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = fn()
        out.append((n, time.perf_counter() - t0))
    return statistics.median(n / t for n, t in out), out[0][0]


def interleaved(rounds: int, measures: dict) -> dict:
    """{name: [result of one call per round]}: every round calls each measure once, in turn."""
    got = {name: [] for name in measures}
    for _ in range(rounds):
        for name, once in measures.items():
            got[name].append(once())
    return got


def full_engine(axes):
    """One timing of tk.sweep over the grid: (configs, seconds). Warmed once (catalog, calibrated sets, shapes)."""
    tk.sweep(**axes)
    n = int(np.prod([len(v) if isinstance(v, list) else 1 for v in axes.values()]))

    def once():
        t0 = time.perf_counter()
        tk.sweep(**axes)
        return n, time.perf_counter() - t0
    return once


def one_at_a_time(axes, samples=2000):
    """One timing of ``samples`` random configurations of the grid, each through Deployment.run on scalars."""
    hw = loader.hardware(HARDWARE)
    deps = {(m, tp): Deployment(loader.model(m), hw, Layout(tp=tp), eff=efficiency_of(hw)) for m in DENSE for tp in TP}
    rng = np.random.default_rng(0)
    picks = [(deps[(DENSE[rng.integers(3)], TP[rng.integers(4)])], float(rng.choice(axes["batch"])),
              float(rng.choice(axes["context"]))) for _ in range(samples)]

    def once():
        t0 = time.perf_counter()
        for d, b, c in picks:
            d.run(b, c)
        return samples, time.perf_counter() - t0
    return once


def peer_model(name: str) -> dict:
    m = loader.model(name)
    a, D = m.layers[0].attention, m.hidden_size
    ffn = m.layers[0].mlp.intermediate_size
    return {"name": name, "num_layers": m.num_layers, "n_head": a.num_heads, "hidden_dim": D,
            "vocab_size": m.vocab_size, "max_seq_len": 1 << 20, "num_key_value_heads": a.num_kv_heads,
            "ffn_embed_dim": int(math.ceil(ffn / D) * D)}


def llm_analysis(axes, samples=1000):
    """One llm-analysis subprocess over ``samples`` configurations of the grid: its JSON line (configs, seconds,
    fit, fit_seconds); llm-analysis refuses a configuration that does not fit by raising, sooner than it answers one
    that fits (sweep_peer.py). None where its venv is missing."""
    if not PEERS.exists():
        return None
    spec = {"gpu": "h100-sxm-80gb", "models": [peer_model(m) for m in DENSE], "tp": list(TP),
            "batch": axes["batch"], "context": axes["context"], "samples": samples}

    def once():
        p = subprocess.run([str(PEERS), str(HERE / "sweep_peer.py")], input=json.dumps(spec), capture_output=True,
                           text=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1])
    return once


def rates(runs) -> float:
    return statistics.median(n / t for n, t in runs)


def plan_kimi():
    axes = dict(model="kimi-k2-instruct", hardware="gb200-nvl72", chips=1152,
                batch=[int(b) for b in 2.0 ** np.arange(13)], context=8192)
    tk.sweep(**axes)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        ds = tk.sweep(**axes)
        times.append(time.perf_counter() - t0)
    from tokenomy.answers.sweep_eval import _CANDIDATES

    n_layouts = sum(int(np.size(v.tp)) for k, v in _CANDIDATES.items() if k[2] == 1152)
    return statistics.median(times), n_layouts, int(ds.sizes["batch"]), int((ds.reason == 0).sum())


def big_axes(points: int) -> dict:
    """A dense decode sweep of about ``points`` points: 3 models x 4 tp x 1024 batches x contexts."""
    n_ctx = max(1, round(points / (3 * 4 * 1024)))
    ctx = list(range(1024, 1024 + n_ctx))  # distinct whole contexts
    return dict(model=list(DENSE), hardware=HARDWARE, tp=list(TP), batch=list(range(1, 1025)), context=ctx)


AIC_QUESTION = dict(model="qwen3-32b", hf="Qwen--Qwen3-32B.json", chips=8, isl=1024, osl=1024, ttft_s=1.0,
                    tpot_s=0.05)


def plan_vs_aiconfigurator(repeats: int = 3):
    """Time to answer one question, as a CLI process, interleaved: the best aggregated TensorRT-LLM deployment of
    Qwen3-32B on 8 H200 for ISL/OSL 1024/1024 under TTFT 1 s and TPOT 50 ms. tokenomy plan (its layouts x a
    concurrency grid through the serving steady state) against aiconfigurator 0.12.0's `cli default --serving-mode
    agg` (its own search) in its venv (bash benchmarks/peers_env.sh aiconfigurator). Only the wall times are used:
    aiconfigurator's answers rest on its packaged measured samples, which this project never reads or compares."""
    aic = HERE / ".venv-aiconfigurator" / "bin" / "aiconfigurator"
    if not aic.exists():
        return None, None, "not run: bash benchmarks/peers_env.sh aiconfigurator first"
    q = AIC_QUESTION
    tok = [str(Path(sys.executable).parent / "tokenomy"), "plan", "--model", q["model"], "--hardware", "hgx-h200-8",
           "--chips", str(q["chips"]), "--concurrency", "1..1024", "--isl", str(q["isl"]), "--osl", str(q["osl"]),
           "--ttft-slo", str(q["ttft_s"]), "--tpot-slo", str(q["tpot_s"]), "--engine", "trtllm", "--top", "1"]
    walls = {"tokenomy": [], "aiconfigurator": []}
    with tempfile.TemporaryDirectory() as d:
        model_dir = Path(d) / "model"
        model_dir.mkdir()
        shutil.copy(Path(loader.__file__).parent / "models" / q["hf"], model_dir / "config.json")
        peer = [str(aic), "cli", "default", "--model-path", str(model_dir), "--total-gpus", str(q["chips"]),
                "--system", "h200_sxm", "--backend", "trtllm", "--isl", str(q["isl"]), "--osl", str(q["osl"]),
                "--ttft", str(q["ttft_s"] * 1e3), "--tpot", str(q["tpot_s"] * 1e3), "--serving-mode", "agg",
                "--log-level", "ERROR", "--save-dir", str(Path(d) / "out")]
        for _ in range(repeats):
            for name, cmd in (("tokenomy", tok), ("aiconfigurator", peer)):
                t0 = time.perf_counter()
                subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=d)
                walls[name].append(time.perf_counter() - t0)
    return statistics.median(walls["tokenomy"]), statistics.median(walls["aiconfigurator"]), \
        f"median of {repeats}, interleaved"


RSS_CHILD = """
import resource, sys, time
from tokenomy.answers.sweeps import sweep
sys.path.insert(0, {here!r})
from sweep import big_axes
t0 = time.perf_counter()
sweep(**big_axes({points}), variables=["step_s"], out={out!r}, chunk_points=1 << 18)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, time.perf_counter() - t0)
"""


def streamed_rss(points: int):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "sweep.parquet")
        code = RSS_CHILD.format(here=str(HERE), points=points, out=out)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        rss, secs = p.stdout.split()
        size = os.path.getsize(out)
    return int(rss), float(secs), size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--rss-points", type=float, default=1e9)
    args = ap.parse_args()
    axes = dense_axes(64, 16) if args.quick else dense_axes(1024, 256)
    measures = {"engine": full_engine(axes), "loop": one_at_a_time(axes)}
    peer_once = llm_analysis(axes)
    if peer_once is not None:
        measures["peer"] = peer_once
    got = interleaved(3, measures)
    vec, loop = rates(got["engine"]), rates(got["loop"])
    n = got["engine"][0][0]
    print(f"grid: {len(DENSE)} dense models x {HARDWARE} x tp {TP} x {len(axes['batch'])} batches x "
          f"{len(axes['context'])} contexts = {n:,} configs (decode, calibrated, through tk.sweep)")
    print(f"full engine: {vec:,.0f} configs/s (median of 3 interleaved rounds; one process, {os.cpu_count()} cores "
          f"on the box)")
    print(f"one at a time: {loop:,.0f} configs/s (the same engine, Deployment.run per configuration)")
    print(f"vectorised / one at a time: {vec / loop:,.0f}x")
    peer = peer_fit = None
    if "peer" in got:
        runs = got["peer"]
        peer = rates((r["configs"], r["seconds"]) for r in runs)
        peer_fit = statistics.median(r["fit"] / r["fit_seconds"] if r["fit"] else float("nan") for r in runs)
        print(f"llm-analysis: {peer:,.0f} configs/s over all configs, {peer_fit:,.0f} configs/s over the "
              f"{runs[0]['fit'] / runs[0]['configs']:.0%} it finds fit (median of 3 interleaved rounds of "
              f"{runs[0]['configs']} configs, llm-analysis 0.2.2 in benchmarks/.venv-peers)")
        print(f"full engine / llm-analysis: {vec / peer_fit:,.0f}x over the configs it answers (the figure quoted; "
              f"the engine's rate is the same for every point), {vec / peer:,.0f}x over all, its refusals included")
    else:
        print("llm-analysis: not run: bash benchmarks/peers_env.sh first")
    t, n_lay, n_b, ok = plan_kimi()
    print(f"plan kimi-k2-instruct on 1,152 GB200 (gb200-nvl72): {n_lay} valid layouts x {n_b} batches at 8k: "
          f"{t * 1e3:,.0f} ms in process (median of 3; {ok} batches fit)")
    tok_s, aic_s, aic_how = plan_vs_aiconfigurator(1 if args.quick else 3)
    if tok_s:
        print(f"serving plan, Qwen3-32B on 8 H200 under TTFT 1 s / TPOT 50 ms, as CLI processes ({aic_how}): "
              f"tokenomy plan {tok_s:.1f} s, aiconfigurator 0.12.0 cli default {aic_s:.1f} s: {aic_s / tok_s:.1f}x")
    else:
        print(f"aiconfigurator: {aic_how}")
    rpts = int(1e6 if args.quick else args.rss_points)
    for pts in (rpts // 10, rpts):
        rss, secs, size = streamed_rss(pts)
        print(f"streamed to Parquet: {pts:,} points in {secs:.0f} s, peak RSS {rss / 1e9:.2f} GB, file "
              f"{size / 1e9:.2f} GB")
    if not args.quick:
        figures = {"configs_per_s": vec, "one_at_a_time_per_s": loop, "vs_one_at_a_time": vec / loop,
                   "plan_kimi_s": t, "streamed_points": rpts,
                   "streamed_s": secs, "streamed_peak_rss_bytes": rss}
        if peer:
            figures.update(peer_configs_per_s_answered=peer_fit, vs_peer_answered=vec / peer_fit,
                           vs_peer_all=vec / peer)
        if tok_s:
            figures.update(plan_cli_s=tok_s, aiconfigurator_cli_s=aic_s, aiconfigurator_vs_plan=aic_s / tok_s)
        record("sweep", figures)


if __name__ == "__main__":
    main()
