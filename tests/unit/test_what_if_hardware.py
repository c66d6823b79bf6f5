"""What-if hardware (specs.Hardware.with_, answers/variants.py, the partial TOML through catalog/loader.py): the
overrides move the answers the way the engine's terms say, every answer names what was set, bad fields are refused.

The expected ratios come from the engine's own statement of its terms (core/engine.py's docstring): the memory term
is bytes / (HBM bandwidth x eta), so 2x the bandwidth halves it and leaves the compute term's FLOPs alone; the
dollars are chips x $/chip-h x step / tokens (lecture §2.1), linear in the price at an unchanged step."""

from __future__ import annotations

import json

import pytest

import tokenomy as tk
from tokenomy.answers.variants import hardware_with, parse_set
from tokenomy.catalog.loader import CatalogError, hardware
from tokenomy.specs import OVERRIDABLE

MODEL, HW = "llama-3.1-70b", "hgx-h100-8"
POINT = dict(batch=[8], context=[4096], tp=8)  # memory-bound on 8 x H100 (weights read per step dominate)


def _row(hw, **kw):
    return tk.decode(MODEL, hw, **{**POINT, **kw}).rows()[0]


def test_two_x_hbm_bandwidth_halves_the_memory_term_of_a_memory_bound_decode():
    base, fast = _row(HW), _row(hardware(HW).with_(hbm_bytes_per_s="x2"))
    assert base["bound"] == "memory"
    for term in ("memory_s", "weights_read_s", "kv_s"):
        assert fast[term] == pytest.approx(base[term] / 2, rel=1e-12), term
    assert fast["step_s"] < base["step_s"]
    assert fast["comms_s"] == base["comms_s"] and fast["overhead_s"] == base["overhead_s"]


def test_two_x_flops_leaves_the_memory_term_and_shrinks_compute():
    base, fast = _row(HW), _row(hardware(HW).with_(peak_flops_per_s="x2"))
    assert fast["memory_s"] == base["memory_s"]
    assert fast["compute_s"] < base["compute_s"]
    assert fast["step_s"] <= base["step_s"]


def test_a_relative_and_an_absolute_value_are_the_same_chip():
    a = hardware(HW).with_(hbm_bytes_per_s="x2")
    b = hardware(HW).with_(hbm_bytes_per_s=2 * hardware(HW).chip.hbm_bytes_per_s)
    assert a.chip == b.chip and a.topology.chip == b.topology.chip
    assert _row(a)["step_s"] == _row(b)["step_s"]


def test_price_scales_dollars_and_leaves_time():
    base, dear = _row(HW), _row(hardware(HW).with_(usd_per_chip_hour="x3"))
    assert dear["step_s"] == base["step_s"]
    assert dear["usd_per_mtok"] == pytest.approx(3 * base["usd_per_mtok"], rel=1e-12)


def test_scale_up_bandwidth_reaches_the_topology_the_engine_reads():
    hw = hardware(HW).with_(scale_up_bytes_per_s="x2", scale_up_latency_s=1e-6)
    assert hw.topology.scale_up.bytes_per_s == 2 * hardware(HW).topology.scale_up.bytes_per_s
    assert hw.topology.scale_up.latency_s == 1e-6 == hw.chip.scale_up.latency_s
    assert _row(hw)["comms_s"] < _row(HW)["comms_s"]


def test_hbm_capacity_decides_what_fits():
    one = dict(batch=[1], context=[4096], tp=1)  # 70B in bf16: 141 GB of weights on one 80 GB H100
    assert not _row("h100-sxm", **one)["fits"]
    big = hardware("h100-sxm").with_(hbm_bytes="x2")
    assert big.chip.exposed_hbm_bytes == pytest.approx(2 * hardware("h100-sxm").chip.exposed_hbm_bytes)
    assert _row(big, **one)["fits"]


def test_every_answer_names_what_was_set():
    hw = hardware(HW).with_(hbm_bytes_per_s=6.7e12)
    res = tk.decode(MODEL, hw, **POINT)
    assert "what-if: hbm_bytes_per_s 3.35e+12 -> 6.7e+12" in res.title
    assert res.explain()[0].startswith("what-if hardware hgx-h100-8: hbm_bytes_per_s")
    payload = json.loads(json.dumps(res.payload()))
    [o] = payload["hardware_overrides"]
    assert (o["field"], o["base"], o["value"], o["factor"]) == ("hbm_bytes_per_s", 3.35e12, 6.7e12, 2.0)
    assert payload["rows"][0]["step_s"] == res.rows()[0]["step_s"]
    plain = tk.decode(MODEL, HW, **POINT)
    assert "what-if" not in plain.title and isinstance(plain.payload(), list)


ASKS = {"serve": lambda hw: tk.serve(MODEL, hw, concurrency=[8], tp=8),
        "batch": lambda hw: tk.batch(model=MODEL, hardware=hw, batch=[8], tp=8),
        "plan": lambda hw: tk.plan(MODEL, hw, top=1),
        "lifecycle": lambda hw: tk.lifecycle(hardware=hw),  # a one-record answer: the record carries them
        "train": lambda hw: tk.train(model="llama-3.1-8b", hardware=hw, chips=8, tp=8, global_batch=[64])}


@pytest.mark.parametrize("answer", ASKS)
def test_the_header_shows_the_overrides_on_other_answers(answer):
    res = ASKS[answer](hardware(HW).with_(usd_per_chip_hour=4.0))
    assert "usd_per_chip_hour 2.69 -> 4" in res.title
    assert res.payload()["hardware_overrides"][0]["value"] == 4.0


@pytest.mark.parametrize("kw, says", [
    ({"hbm_bandwidth": 1e12}, "hbm_bandwidth: not a hardware field; allowed: hbm_bytes_per_s"),
    ({"hbm_bytes_per_s": 0}, "hbm_bytes_per_s: must be a finite number > 0"),
    ({"hbm_bytes_per_s": -3e12}, "hbm_bytes_per_s: must be a finite number > 0"),
    ({"hbm_bytes_per_s": "x0"}, "hbm_bytes_per_s: a multiplier must be x followed by"),
    ({"hbm_bytes_per_s": "x-2"}, "hbm_bytes_per_s: a multiplier must be x followed by"),
    ({"peak_flops_per_s": 1e15}, "peak_flops_per_s: takes a multiplier"),
    ({"fp4_flops_per_s": "x2"}, "fp4_flops_per_s: h100-sxm has no figure to multiply"),
    ({"tdp_w": float("inf")}, "tdp_w: must be a finite number > 0"),
])
def test_bad_fields_are_refused_naming_them(kw, says):
    with pytest.raises(ValueError) as e:
        hardware(HW).with_(**kw)
    assert str(e.value).startswith(says)


def test_the_door_grammar_names_set():
    assert parse_set("hbm_bytes_per_s=9.6e12, bf16_flops_per_s=x2") == {"hbm_bytes_per_s": "9.6e12",
                                                                          "bf16_flops_per_s": "x2"}
    for text, says in (("foo=1", "set: foo: not a hardware field"), ("hbm_bytes_per_s", "set: 'hbm_bytes_per_s' is "
                       "not field=value"), ("hbm_bytes_per_s=1,hbm_bytes_per_s=2", "set: hbm_bytes_per_s is set twice"),
                       ("hbm_bytes_per_s=abc", "set: hbm_bytes_per_s: 'abc' is not a number"), (",", "set: give")):
        with pytest.raises(ValueError) as e:
            hardware_with(HW, text)
        assert str(e.value).startswith(says), str(e.value)
    assert set(OVERRIDABLE) >= {"hbm_bytes_per_s", "hbm_bytes", "bf16_flops_per_s", "scale_out_bytes_per_s",
                                "scale_up_latency_s", "usd_per_chip_hour", "tdp_w"}


def test_an_adding_fp4_figure_reaches_fp4_weights():
    hw = hardware("h100-sxm").with_(fp4_flops_per_s=4e15)
    assert hw.chip.flops_for("fp4") == ("fp4", 4e15)
    assert hw.overrides[0].base is None and "none -> 4e+15" in hw.label()


# ---- the partial chip/system file ----------------------------------------------------------------------

GOOD = '''base = "hgx-h100-8"
source = "what-if: an H100 node with HBM4-class bandwidth, the rest as catalogued"
as_of = 2026-12-05
hbm_bytes_per_s = "x2"
usd_per_chip_hour = 3.5
'''


def test_a_partial_file_loads_and_cites_its_base(tmp_path):
    p = tmp_path / "h100-hbm4.toml"
    p.write_text(GOOD)
    hw = tk.hardware(str(p))
    assert hw.name == "h100-hbm4" and hw.num_chips == 8 and hw.chip.name == "h100-sxm"
    assert hw.chip.hbm_bytes_per_s == 2 * hardware(HW).chip.hbm_bytes_per_s and hw.usd_per_chip_hour == 3.5
    src = hw.overrides[0].source
    assert src.startswith("what-if: an H100 node") and "base hgx-h100-8" in src and "2026-12-05" in src
    res = tk.decode(MODEL, str(p), **POINT)  # by path, as --hardware my-chip.toml gives it
    assert res.payload()["hardware_overrides"][0]["source"] == src
    assert res.rows()[0]["memory_s"] == pytest.approx(_row(HW)["memory_s"] / 2, rel=1e-12)


@pytest.mark.parametrize("edit, says", [
    (lambda t: t.replace('base = "hgx-h100-8"', 'base = "h100-typo"'), "field 'base': unknown hardware 'h100-typo'"),
    (lambda t: t.replace("what-if: an", "an"), "field 'source'"),
    (lambda t: t.replace('usd_per_chip_hour = 3.5', 'hbm_speed = 3'), "field 'hbm_speed': not a hardware field"),
    (lambda t: t.replace('usd_per_chip_hour = 3.5', 'usd_per_chip_hour = -1'), "field 'usd_per_chip_hour': must be"),
    (lambda t: "\n".join(x for x in t.splitlines() if not x.startswith(("hbm", "usd"))), "sets no field"),
    (lambda t: t.replace("as_of = 2026-12-05\n", ""), "field 'as_of'"),
])
def test_a_bad_partial_file_names_the_file_and_the_field(tmp_path, edit, says):
    p = tmp_path / "bad-chip.toml"
    p.write_text(edit(GOOD))
    with pytest.raises(CatalogError) as e:
        tk.hardware(str(p))
    assert str(e.value).startswith("bad-chip.toml: ") and says in str(e.value), str(e.value)


def test_the_shipped_example_loads_and_is_sourced():
    from pathlib import Path

    p = Path(__file__).resolve().parents[2] / "examples" / "what-if" / "h100-hbm4.toml"
    hw = tk.hardware(str(p))
    [o] = hw.overrides
    assert (o.field, o.value) == ("hbm_bytes_per_s", 2 * hardware(HW).chip.hbm_bytes_per_s)
    assert o.source.startswith("what-if: ") and "base hgx-h100-8" in o.source
