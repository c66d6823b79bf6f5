"""Figure dictionaries: log axes, trace names, point counts; and the per-op costs the roofline plots."""

from __future__ import annotations

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.inference import run_pass
from tokenomy.core.op_costs import op_costs
from tokenomy.plots.roofline import roofline_figure

from .figs import arr, trace


@pytest.mark.parametrize("name, B, C, S", [("deepseek-v3", 64, 8192, 1), ("gemma-3-27b-it", 1, 32768, 1),
                                           ("gpt-oss-120b", 4, 4096, 4096), ("llama-3.1-8b", 3, 4096, 100)])
def test_op_costs_sum_to_the_engine_pass(name, B, C, S):
    m = loader.model(name)
    s = run_pass(m, loader.hardware("hgx-h100-8"), batch=B, context=C, len_pass=S, chips=64).step
    ops = op_costs(m, batch=B, context=C, len_pass=S)
    assert sum(o.flops for o in ops) == pytest.approx(float(s.flops), rel=1e-12)
    total = float(s.weight_bytes + s.kv_read_bytes + s.kv_write_bytes + s.act_bytes)
    assert sum(o.bytes for o in ops) == pytest.approx(total, rel=1e-12)
    assert sum(o.count for o in ops) == len(__import__("tokenomy.arch.ops", fromlist=["lower"]).lower(m))


def test_op_costs_group_layers_and_split_windows():
    ops = {o.name: o for o in op_costs(loader.model("gemma-3-27b-it"), batch=1, context=100_000)}
    assert ops["attn.proj"].count == 62
    assert ops["attn.scores (window 1024)"].count + ops["attn.scores"].count == 62
    # a sliding-window layer reads at most 1024 positions of KV; a global one all 100k
    w, g = ops["attn.scores (window 1024)"], ops["attn.scores"]
    assert w.bytes / w.count < g.bytes / g.count / 50


def test_decode_matmul_intensity_grows_with_batch():
    m = loader.model("llama-3.1-70b")
    i = [next(o for o in op_costs(m, batch=b, context=2048) if o.name == "mlp").intensity for b in (1, 16, 256)]
    assert i[0] < i[1] < i[2] and i[1] / i[0] == pytest.approx(16, rel=0.05)  # ≈ B FLOP/B at bf16


def _fig(model="deepseek-v3", hw="gb200-nvl72", B=64, C=8192):
    m, h = loader.model(model), loader.hardware(hw)
    r = run_pass(m, h, batch=B, context=C)
    s = r.step
    ops = op_costs(m, batch=B, context=C)
    by = float(s.weight_bytes + s.kv_read_bytes + s.kv_write_bytes + s.act_bytes)
    return ops, r, roofline_figure(ops, peak_flops_per_s=r.peak_flops_per_s, hbm_bytes_per_s=r.hbm_bytes_per_s,
                                   pass_flops=float(s.flops), pass_bytes=by, pass_step_s=float(s.step_s),
                                   chips=r.chips)


def test_roofline_figure_is_log_log_with_named_traces():
    ops, r, fig = _fig()
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    names = [t["name"] for t in fig["data"]]
    assert names == ["roof", "ridge", "ops", "this pass"]
    shown = [o for o in ops if o.flops > 0]
    assert len(arr(trace(fig, "ops")["x"])) == len(shown) == len(ops) - 1  # the embedding gather has no FLOPs
    assert "not shown (no FLOPs): embed" in fig["layout"]["title"]["text"]


def test_roofline_points_sit_on_or_under_the_roof():
    ops, r, fig = _fig("llama-3.1-70b", "hgx-h100-8", B=32, C=4096)
    roof = lambda x: np.minimum(r.peak_flops_per_s, np.asarray(x) * r.hbm_bytes_per_s)  # noqa: E731
    pts = trace(fig, "ops")
    assert np.allclose(arr(pts["y"]), roof(arr(pts["x"])))
    star = trace(fig, "this pass")
    x, y = arr(star["x"])[0], arr(star["y"])[0]
    assert y <= roof(x) * (1 + 1e-9)  # the pass never beats its roof (per chip)
    assert y > roof(x) / 2  # and with no overhead it sits near it
    assert arr(trace(fig, "ridge")["x"])[0] == pytest.approx(r.peak_flops_per_s / r.hbm_bytes_per_s)
    assert arr(trace(fig, "roof")["y"]).max() == pytest.approx(r.peak_flops_per_s)


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
    assert [t["name"] for t in f["data"]] == ["tokens"] and f["layout"]["yaxis2"]["type"] == "log"
    priced = {**inverse, **{f"{k}_usd": v for k, v in (("pretraining", 6e6), ("rl", 6e6), ("inference", 2.8e7))},
              **{f"{k}_fraction": v for k, v in (("pretraining", 0.15), ("rl", 0.15), ("inference", 0.7))},
              "total_usd": 4e7}
    g = lifecycle_split(priced)
    assert [t["name"] for t in g["data"]] == ["$ (millions)", "tokens"]
    assert g["data"][0]["y"] == [6.0, 6.0, 28.0] and g["data"][0]["text"] == ["15.0%", "15.0%", "70.0%"]
