"""Figure dictionaries: log axes, trace names, point counts; and the per-op costs the roofline plots, which are
the engine's work on the busiest chip split by op shape (core.op_costs), so they add up to the engine's pass."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.arch.ops import lower
from tokenomy.catalog import loader

from tokenomy.core.layout import Layout
from tokenomy.core.op_costs import op_costs, per_chip
from tokenomy.plots import serving as sp
from tokenomy.plots.roofline import roofline_figure
from tokenomy.web import serve

from .figs import arr, trace


@pytest.mark.parametrize("name, hw, layout, B, C, S", [
    ("deepseek-v3", "gb200-nvl72", Layout(tp=1, ep=64), 64, 8192, 1),  # MLA + experts, attention-DP beside EP
    ("gemma-3-27b-it", "hgx-h100-8", Layout(tp=8), 1, 32768, 1),  # sliding-window and global layers
    ("gpt-oss-120b", "hgx-h100-8", Layout(tp=2, ep=4), 4, 4096, 4096),  # a prefill
    ("llama-3.1-8b", "hgx-h100-8", Layout(tp=2, pp=2, dp=2), 3, 4096, 100),  # pipelined, micro-batched
    ("llama-3.1-70b", "hgx-h100-8", Layout.even_split(8), 32, 4096, 1),  # the ideal bound
])
def test_op_costs_sum_to_the_engine_pass(name, hw, layout, B, C, S):
    dep = deployment(name, hw, layout=layout)
    ops = op_costs(dep, batch=B, context=C, len_pass=S)
    flops, nbytes = per_chip(dep.work(B, C, S))  # the busiest chip of a stage, per micro-batch
    assert sum(o.flops for o in ops) == pytest.approx(flops, rel=1e-12)
    assert sum(o.bytes for o in ops) == pytest.approx(nbytes, rel=1e-12)
    assert sum(o.count for o in ops) == len(lower(dep.model))
    w = dep.work(B, C, S)
    assert float(np.asarray(w.flops)) >= flops  # the whole pass over all chips holds at least one chip's share


def engine_chip_flops(w) -> float:
    """The engine's per-chip FLOP terms (what its compute time divides by the efficiencies): every ``*_flops``
    field but the whole-pass ones (``flops``, ``attention_flops`` are all chips)."""
    return sum(float(np.asarray(getattr(w, f.name))) for f in fields(w)
               if f.name.endswith("_flops") and f.name not in ("flops", "attention_flops"))




@pytest.mark.parametrize("name, hw, layout", [("deepseek-v3", "gb200-nvl72", Layout(tp=1, ep=64)),
                                              ("gemma-3-27b-it", "hgx-h100-8", Layout(tp=8)),
                                              ("llama-3.1-8b", "hgx-h100-8", Layout(tp=2, pp=2, dp=2))])
def test_op_flops_are_the_engines_per_chip_flops(name, hw, layout):
    dep = deployment(name, hw, layout=layout)
    ops = op_costs(dep, batch=8, context=8192)
    assert sum(o.flops for o in ops) == pytest.approx(engine_chip_flops(dep.work(8, 8192, 1)), rel=1e-12)


def test_attention_ops_carry_their_flops():
    dep = deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(tp=8))
    ops = {o.name: o for o in op_costs(dep, batch=64, context=8192)}
    w = dep.work(64, 8192, 1)
    per_chip_attention = float(np.asarray(w.attention_flops)) / 8  # all chips' q·k and p·v, split evenly by tp8
    assert ops["attn.scores"].flops == pytest.approx(per_chip_attention, rel=1e-9)


def test_op_costs_group_layers_and_split_windows():
    dep = deployment("gemma-3-27b-it", "h100-sxm", layout=Layout())
    ops = {o.name: o for o in op_costs(dep, batch=1, context=100_000)}
    assert ops["attn.proj"].count == 62
    assert ops["attn.scores (window 1024)"].count + ops["attn.scores"].count == 62
    # a sliding-window layer reads at most 1024 positions of KV; a global one all 100k
    w, g = ops["attn.scores (window 1024)"], ops["attn.scores"]
    assert w.bytes / w.count < g.bytes / g.count / 50


def test_decode_matmul_intensity_grows_with_batch():
    dep = deployment("llama-3.1-70b", "h100-sxm", layout=Layout())
    i = [next(o for o in op_costs(dep, batch=b, context=2048) if o.name == "mlp").intensity for b in (1, 16, 256)]
    assert i[0] < i[1] < i[2] and i[1] / i[0] == pytest.approx(16, rel=0.05)  # ≈ B FLOP/B at bf16


def _serve(**q):
    kind, query = serve.parse_serve({k: str(v) for k, v in q.items()})
    return serve.serve_view(kind, query)


def test_roofline_figure_is_log_log_with_named_traces():
    v = _serve(model="deepseek-v3", hardware="gb200-nvl72", batch=64, context=8192)
    fig = v["figures"]["roofline"]
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    assert [t["name"] for t in fig["data"]] == ["roof", "ridge", "ops", "this pass"]
    pts = trace(fig, "ops")
    assert "embed" not in list(pts["text"]) and "attn.proj" in list(pts["text"])
    assert "not shown (no FLOPs): embed" in fig["layout"]["title"]["text"]


@pytest.mark.parametrize("q", [dict(model="llama-3.1-70b", hardware="hgx-h100-8", batch=32, context=4096),
                               dict(model="llama-3.1-70b", hardware="hgx-h100-8", batch=64, context=8192, tp=2,
                                    pp=4),  # 4 micro-batches per step
                               dict(model="llama-3.1-70b", hardware="hgx-h100-8", batch=32, context=4096,
                                    efficiency="roofline")])
def test_roofline_points_sit_on_or_under_the_roof(q):
    v = _serve(**q)
    fig, row = v["figures"]["roofline"], v["row"]
    chip = loader.hardware(q["hardware"]).chip
    peak, bw = chip.peak_flops_per_s[v["compute_dtype"]], chip.hbm_bytes_per_s
    roof = lambda x: np.minimum(peak, np.asarray(x) * bw)  # noqa: E731
    pts = trace(fig, "ops")
    assert np.allclose(arr(pts["y"]), roof(arr(pts["x"])))
    star = trace(fig, "this pass")
    x, y = arr(star["x"])[0], arr(star["y"])[0]
    assert y <= roof(x) * (1 + 1e-9)  # the pass never beats its roof (per chip)
    if q.get("efficiency") == "roofline" and row["bound"] == "memory" and not row["comms_s"]:
        assert y == pytest.approx(roof(x) * row["memory_s"] / row["step_s"], rel=1e-6)
    assert arr(trace(fig, "ridge")["x"])[0] == pytest.approx(peak / bw)
    assert arr(trace(fig, "roof")["y"]).max() == pytest.approx(peak)


def test_roofline_star_at_the_ideal_bound_sits_on_the_roof():
    v = _serve(model="llama-3.1-70b", hardware="hgx-h100-8", batch=8, context=4096, layout="ideal",
               efficiency="roofline")
    star = trace(v["figures"]["roofline"], "this pass")
    chip_bw = loader.hardware("hgx-h100-8").chip.hbm_bytes_per_s
    x, y = arr(star["x"])[0], arr(star["y"])[0]
    # even split, no comms, memory-bound: achieved FLOP/s = I·BW·memory/step (the step adds only the overhead)
    assert y / (x * chip_bw) == pytest.approx(v["row"]["memory_s"] / v["row"]["step_s"], rel=1e-3)


ROWS = [{"batch": b, "step_s": 1e-2 + 1e-4 * b, "roofline_step_s": 5e-3 + 5e-5 * b, "compute_s": 1e-4 * b,
         "weights_read_s": 8e-3, "kv_s": 5e-5 * b, "act_s": 1e-6 * b, "comms_s": 0.0, "overhead_s": 1e-3}
        for b in (1, 8, 64)] + [{"batch": 512, "step_s": None, "roofline_step_s": None}]  # does not fit


def test_latency_vs_batch_draws_the_rows_terms():
    f = sp.latency_vs_batch(ROWS, marks={"this batch": 8})
    names = [t["name"] for t in f["data"]]
    assert names == ["step", "roofline bound", "compute", "weight fetch", "KV fetch", "activation traffic",
                     "overhead"]  # communication is zero at every batch: left out
    assert f["layout"]["xaxis"]["type"] == "log" and f["layout"]["yaxis"]["type"] == "log"
    assert trace(f, "step")["x"] == [1, 8, 64]  # the point that does not fit is left out
    assert trace(f, "KV fetch")["y"] == pytest.approx([1e3 * 5e-5 * b for b in (1, 8, 64)])
    assert trace(f, "weight fetch")["y"] == pytest.approx([8.0] * 3)
    assert f["layout"]["shapes"][0]["x0"] == 8


TRAIN_ROWS = [{"global_batch": g, "compute_s": c, "bubble_s": b, "comm_exposed_s": e, "step_s": c + b + e,
               "weights_bytes": 4e9, "gradients_bytes": 4e9, "optimizer_bytes": 1e9, "activations_bytes": a,
               "hbm_bytes": 80e9} for g, c, b, e, a in ((256, 1.0, 0.5, 0.4, 10e9), (512, 2.0, 0.5, 0.8, 20e9))]


def test_training_figures_stack_terms_per_global_batch():
    from tokenomy.plots.training import memory_stack, step_terms

    f = step_terms(TRAIN_ROWS)
    assert f["layout"]["barmode"] == "stack" and f["layout"]["xaxis"]["type"] == "category"
    assert [t["name"] for t in f["data"]] == ["compute", "pipeline bubble", "exposed communication", "step"]
    assert all(len(t["x"]) == 2 for t in f["data"])
    assert f["data"][3]["y"] == [r["step_s"] for r in TRAIN_ROWS]
    m = memory_stack(TRAIN_ROWS)
    assert [t["name"] for t in m["data"]] == ["weights", "gradients", "optimizer", "activations", "HBM"]
    assert m["data"][3]["y"] == [10.0, 20.0] and m["data"][4]["y"] == [80.0, 80.0]  # GB


def test_lifecycle_figure_both_directions():
    from tokenomy.plots.training import lifecycle_split

    inverse = {"d_pre": 2.6e14, "d_rl": 1.7e14, "d_inf": 2.6e14}
    f = lifecycle_split(inverse)
    assert [t["name"] for t in f["data"]] == ["tokens"] and f["layout"]["yaxis2"]["type"] == "linear"  # bars on a linear axis (issue 14)
    priced = {**inverse, **{f"{k}_usd": v for k, v in (("pretraining", 6e6), ("rl", 6e6), ("inference", 2.8e7))},
              **{f"{k}_fraction": v for k, v in (("pretraining", 0.15), ("rl", 0.15), ("inference", 0.7))},
              "total_usd": 4e7}
    g = lifecycle_split(priced)
    assert [t["name"] for t in g["data"]] == ["$ (millions)", "tokens"]
    assert g["data"][0]["y"] == [6.0, 6.0, 28.0] and g["data"][0]["text"] == ["15.0%", "15.0%", "70.0%"]


def test_share_axes_tick_at_a_readable_step_with_the_decimals_it_needs():
    from tokenomy.plots.serving import percent_ticks

    for top, dtick, fmt in ((0.02, 0.005, ".1~%"), (0.33, 0.05, ".0~%"), (1.05, 0.2, ".0~%"), (0.003, 0.0005, ".2~%")):
        t = percent_ticks([0, top])
        assert t["dtick"] == pytest.approx(dtick) and t["tickformat"] == fmt, (top, t)
        assert 3 <= top / t["dtick"] <= 8  # a handful of ticks, never a crowd


def test_pricing_ratio_note_sits_on_the_log_axis_in_log10_units():
    import math

    from tokenomy.plots.economics import pricing_vs_batch

    rows = [{"decode_batch": b, "usd_per_mtok_output": 10 / b, "usd_per_mtok_input": 0.5, "output_over_input": 20 / b,
             "provider_ratio_lo": 3.0, "provider_ratio_hi": 5.0} for b in (1, 8, 64)]
    lay = pricing_vs_batch(rows)["layout"]
    assert lay["yaxis2"]["type"] == "log"
    assert lay["annotations"][0]["y"] == pytest.approx(math.log10(5.0))  # not 5 (which reads as 10^5)
    assert lay["shapes"][0]["y1"] == 5.0  # shapes stay in data units


def test_workload_slo_lines_are_labelled_and_p99_only_from_a_simulation():
    from tokenomy.plots.workload import ttft_tpot_vs_load

    rows = [{"concurrency": c, "ttft_s": 0.1 * c, "ttft_p99_s": 0.2 * c, "tpot_s": 0.02, "tpot_p99_s": 0.03}
            for c in (1, 4, 16)]
    analytic = ttft_tpot_vs_load(rows, slos={"ttft_slo": 1.0, "tpot_slo": 0.05}, percentiles=False)
    assert [t["name"] for t in analytic["data"]] == ["TTFT (mean)", "TPOT (mean)"]
    notes = {a["text"]: a for a in analytic["layout"]["annotations"]}
    assert set(notes) == {"TTFT SLO 1 s", "TPOT SLO 50 ms"}
    assert notes["TPOT SLO 50 ms"]["y"] == pytest.approx(math.log10(50.0))
    simulated = ttft_tpot_vs_load(rows, percentiles=True)
    assert "TTFT p99" in [t["name"] for t in simulated["data"]] and "TPOT p99" in [t["name"] for t in simulated["data"]]
