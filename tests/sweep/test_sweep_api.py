"""tk.sweep against the other doors: every swept point equals what tk.decode / tk.prefill / tk.serve answer for that
point alone (the same engine through a different route: grid building, chunking, layout arrays, plan per point).
Also masking with reasons, dimensions and units, and bad input naming its field."""

from __future__ import annotations

import numpy as np
import pytest

from tokenomy.answers.passes import decode, prefill
from tokenomy.answers.workloads import serve
from tokenomy.answers.sweeps import sweep
from tokenomy.answers.sweep_eval import LEN_PASS_REASON, REASONS, WINDOW_REASON
from tokenomy.catalog import loader
from tokenomy.core import engine

PASS_KEYS = ("step_s", "compute_s", "memory_s", "comms_s", "tokens_per_s_per_chip", "tokens_per_s_per_user",
             "usd_per_mtok", "memory_per_chip_bytes", "mfu")


def _same(a, b):
    if b is None:
        assert np.isnan(a)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


def test_decode_on_degrees_equals_tk_decode_point_by_point():
    ds = sweep(model=["llama-3.1-70b", "qwen3-30b-a3b"], hardware="hgx-h100-8", tp=[2, 8], ep=[1, 4],
               batch=[1, 48, 4096], context=[2048, 131072], chunk_points=5)
    checked = 0
    for m in ds.model.values:
        for tp in ds.tp.values:
            for ep in ds.ep.values:
                if m == "llama-3.1-70b" and ep > 1:  # dense: ep > 1 is an invalid layout
                    pt = ds.sel(model=m, tp=tp, ep=ep)
                    assert np.all(pt.reason == 1) and np.all(np.isnan(pt.step_s))
                    continue
                for b in ds.batch.values:
                    for c in ds.context.values:
                        pt = ds.sel(model=m, tp=tp, ep=ep, batch=b, context=c)
                        if c > loader.model(m).max_position_embeddings:  # one rule: tk.decode refuses, a sweep marks
                            with pytest.raises(ValueError, match="^context: .*max_position_embeddings"):
                                decode(m, "hgx-h100-8", batch=[int(b)], context=[int(c)], tp=int(tp), ep=int(ep))
                            assert int(pt.reason) == WINDOW_REASON and np.isnan(float(pt.step_s))
                            checked += 1
                            continue
                        row = decode(m, "hgx-h100-8", batch=[int(b)], context=[int(c)], tp=int(tp),
                                     ep=int(ep)).rows()[0]
                        for k in PASS_KEYS:
                            _same(float(pt[k]), row[k])
                        assert bool(pt.reason == 0) == row["fits"]
                        if row["fits"]:
                            assert engine.BOUNDS[int(pt.bound)] == row["bound"]
                        checked += 1
    assert checked == 1 * 2 * 1 * 6 + 1 * 2 * 2 * 6


def test_plan_per_point_equals_tk_decode_default_layout():
    ds = sweep(model="qwen3-30b-a3b", hardware="hgx-h100-8", batch=[1, 256], context=[4096, 32768])  # window 40,960
    for b in ds.batch.values:
        for c in ds.context.values:
            r = decode("qwen3-30b-a3b", "hgx-h100-8", batch=[int(b)], context=[int(c)])
            pt = ds.sel(batch=b, context=c)
            plan = r.extra["plan"]
            assert [int(pt[f"plan_{d}"]) for d in ("tp", "ep", "pp", "dp")] == [plan[d] for d in ("tp", "ep", "pp",
                                                                                                 "dp")]
            for k in PASS_KEYS:
                _same(float(pt[k]), r.rows()[0][k])


def test_prefill_with_len_pass_and_efficiency_axis():
    ds = sweep(model="llama-3.1-8b", hardware="h100-sxm", kind="prefill", efficiency=["calibrated", "roofline"],
               batch=[1, 4], context=[1024, 8192], len_pass=[512, 2048])
    for eff in ds.efficiency.values:
        for b in ds.batch.values:
            for c in ds.context.values:
                for s in ds.len_pass.values:
                    pt = ds.sel(efficiency=eff, batch=b, context=c, len_pass=s)
                    if s > c:
                        assert int(pt.reason) == LEN_PASS_REASON and np.isnan(float(pt.step_s))
                        continue
                    row = prefill("llama-3.1-8b", "h100-sxm", batch=[int(b)], context=[int(c)], len_pass=int(s),
                                  efficiency=str(eff), tp=1).rows()[0]
                    _same(float(pt.step_s), row["step_s"])
    assert REASONS[LEN_PASS_REASON] == "len_pass exceeds the context"


def test_serve_equals_tk_serve():
    ds = sweep(model="llama-3.1-8b", hardware="hgx-h100-8", tp=[1, 2], concurrency=[1, 16, 256], isl=[512, 4096],
               osl=256)
    for tp in ds.tp.values:
        for isl in ds.isl.values:
            rows = serve("llama-3.1-8b", "hgx-h100-8", concurrency=[1, 16, 256], isl=int(isl), osl=256,
                         tp=int(tp)).rows()
            for row in rows:
                pt = ds.sel(tp=tp, isl=isl, concurrency=row["concurrency"])
                for k in ("ttft_s", "tpot_s", "e2e_s", "requests_per_s", "tokens_per_s_per_chip",
                          "usd_per_mtok_output", "usd_per_mtok_input"):
                    _same(float(pt[k]), row[k])
                assert bool(pt.capacity_limited) == row["capacity_limited"]


def test_serve_plan_equals_tk_serve_default_layout():
    ds = sweep(model="qwen3-32b", hardware="hgx-h100-8", rate=[0.5, 4.0], isl=2048, osl=512)
    rows = serve("qwen3-32b", "hgx-h100-8", rate=[0.5], isl=2048, osl=512)
    pt = ds.sel(rate=0.5)
    assert int(pt.plan_tp) == rows.extra["plan"]["tp"] and int(pt.plan_dp) == rows.extra["plan"]["dp"]
    _same(float(pt.ttft_s), rows.rows()[0]["ttft_s"])


def test_not_fitting_points_are_masked_with_the_memory_reason():
    ds = sweep(model="llama-3.1-405b", hardware="h100-sxm", tp=1, batch=1, context=2048)
    assert int(ds.reason) == engine.FITS_REASON and np.isnan(float(ds.step_s))
    assert int(ds.bound) == -1
    assert float(ds.memory_per_chip_bytes) > 80e9  # the need is still reported


def test_dims_coords_and_units():
    ds = sweep(model="llama-3.1-8b", hardware=["h100-sxm", "b200"], tp=1, batch=[1, 8, 64], context=[1024, 4096])
    assert ds.step_s.dims == ("hardware", "batch", "context")
    assert list(ds.hardware.values) == ["h100-sxm", "b200"]
    assert ds.step_s.attrs["units"] == "s" and ds.usd_per_mtok.attrs["units"] == "USD/Mtok"
    assert ds.reason.attrs["flag_meanings"][engine.FITS_REASON] == "does not fit in HBM"
    assert float(ds.tp) == 1 and ds.kind.item() == "decode"  # scalars stay as coordinates


def test_chunking_does_not_change_numbers():
    kw = dict(model=["llama-3.1-8b", "qwen3-30b-a3b"], hardware="hgx-h100-8", tp=[1, 2, 4], batch=[1, 3, 64, 512],
              context=[1024, 8192, 65536])
    a, b = sweep(**kw, chunk_points=1), sweep(**kw, chunk_points=10_000)
    for k in a.data_vars:
        np.testing.assert_array_equal(a[k].values, b[k].values)



@pytest.mark.parametrize("kw, keep", [
    (dict(model="qwen3-30b-a3b", hardware="hgx-h100-8", tp=[1, 4], ep=[1, 2], batch=[1, 64, 4096],
          context=[2048, 262144]), ["step_s"]),
    (dict(model="qwen3-30b-a3b", hardware="hgx-h100-8", tp=[1, 4], batch=[1, 64], context=[2048, 65536]),
     ["tokens_per_s_per_chip_p90", "j_per_token_all_in", "bound"]),
    (dict(model="qwen3-30b-a3b", hardware="hgx-h100-8", chips=8, batch=[1, 512], context=[4096, 65536]),
     ["usd_per_mtok", "step_s_p10"]),
    (dict(model="llama-3.1-8b", hardware="h100-sxm", concurrency=[1, 64], isl=[512, 4096], osl=256),
     ["tpot_s", "ttft_s_p90"]),
])
def test_kept_variables_equal_the_full_sweeps(kw, keep):
    # a sweep of some variables computes only those (and what a kept band scales): the same numbers, no others
    full, some = sweep(**kw), sweep(**kw, variables=keep)
    assert set(some.data_vars) == set(keep) | {"reason"}
    assert (full.reason != 0).any() or "concurrency" in kw  # the masks are compared too
    for k in some.data_vars:
        np.testing.assert_array_equal(some[k].values, full[k].values)

@pytest.mark.parametrize("kw, field", [
    (dict(colour=[1]), "colour"),
    (dict(batch=[]), "batch"),
    (dict(batch=[0, 4]), "batch"),
    (dict(context=[1.5]), "context"),
    (dict(kind="train"), "kind"),
    (dict(kv_dtype="fp7"), "kv_dtype"),
    (dict(efficiency="best"), "efficiency"),
    (dict(model="no-such-model"), "model"),
    (dict(concurrency=[1], rate=[1]), "concurrency"),
    (dict(concurrency=[1], batch=[2]), "batch"),
    (dict(tp=2, chips=8), "chips"),
    (dict(layout="ideal"), "layout"),
    (dict(chunk_points=0), "chunk_points"),
    (dict(out="x.txt"), "out"),
])
def test_bad_input_is_one_line_naming_the_field(kw, field):
    args = dict(model="llama-3.1-8b", hardware="h100-sxm")
    args.update(kw)
    with pytest.raises(ValueError) as e:
        sweep(**args)
    msg = str(e.value)
    assert "\n" not in msg and msg.lower().startswith(field), msg
