"""A user's benchmark file in (validate against=, calibrate): each tool's format parses into the right cases, a file
of tokenomy's own predictions slowed by 1.3 reads as exactly that error and calibration recovers it on held-out
points, identifiability follows the physics, and bad input is one clear error with nothing written.

The files are written by tests/validation/benchmark_files.py in each tool's documented layout (cited there)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import benchmark_files as bf
import tokenomy as tk
from tokenomy.validation import against, ingest, user_calibrate
from tokenomy.validation.measured_run import MeasuredRun
from tokenomy.validation.prepare import prepare_serving

SETUP = {"hardware": "h100-sxm"}
POINTS = [dict(concurrency=4, isl=1024, osl=256, ttft_s=0.05, tpot_s=0.008, itl_s=0.0079, output_tokens_per_s=480.0),
          dict(concurrency=16, isl=1000, osl=250, ttft_s=0.09, tpot_s=0.011, itl_s=0.0108, output_tokens_per_s=1400.0)]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_vllm_append_result_file_parses_by_content_into_cases(tmp_path):
    path = _write(tmp_path, "results.txt", bf.vllm_file(POINTS))  # the name says nothing: the content decides
    runs = ingest.read(path)
    assert [r.tool for r in runs] == ["vllm-bench", "vllm-bench"]
    assert [r.concurrency for r in runs] == [4, 16] and runs[1].isl == 1000 and runs[1].osl == 250
    assert runs[0].ttft_s == pytest.approx(0.05) and runs[0].itl_s == pytest.approx(0.0079)
    assert runs[0].engine_hint == "vllm" and runs[0].num_prompts == 40
    cases = against.cases(runs, against.Setup(hardware="h100-sxm", tp=2, chips=4), "results")
    assert len(cases) == 8 and {c.protocol for c in cases} == {"vllm-bench"}
    assert {c.model for c in cases} == {"llama-3.1-8b"}  # the served id, mapped to the catalog
    tput = [c for c in cases if c.metric == "throughput_per_chip"]
    assert [c.value for c in tput] == pytest.approx([120.0, 350.0])  # tok/s over 4 chips
    assert {c.scenario for c in cases} == {"concurrency"} and cases[0].concurrency == 4
    itl = next(c for c in cases if c.id == "results-1-itl_s")
    assert itl.metric == "tpot_s" and itl.value == pytest.approx(0.0079)


def test_vllm_rate_and_rate_inf_runs_take_their_load_from_the_file(tmp_path):
    open_loop = {**POINTS[0], "concurrency": None, "rate": 2.5}
    all_at_once = {**POINTS[0], "concurrency": None, "n": 64}
    path = _write(tmp_path, "r.json", bf.vllm_file([open_loop, all_at_once]))
    cases = against.cases(ingest.read(path), against.Setup(hardware="h100-sxm"), "r")
    first, second = cases[0], cases[4]
    assert first.scenario == "request_rate" and first.request_rate == 2.5
    assert second.scenario == "concurrency" and second.concurrency == 64  # rate inf: every prompt a client


@pytest.mark.parametrize("writer, version", [(bf.aiperf_json, "aiperf 0.8.0"), (bf.genai_perf_json, "genai-perf")])
def test_aiperf_and_genai_perf_json(tmp_path, writer, version):
    path = _write(tmp_path, "profile_export.json", json.dumps(writer(POINTS[1])))
    (run,) = ingest.read(path)
    assert (run.tool, run.tool_version, run.concurrency, run.num_prompts) == ("aiperf", version, 16, 100)
    assert run.tpot_s == pytest.approx(0.011) and run.itl_s is None  # AIPerf's ITL is vLLM's TPOT
    assert run.output_tokens_per_s == pytest.approx(1400.0) and run.model_id == bf.MODEL_ID
    cases = against.cases([run], against.Setup(hardware="h100-sxm"), "p")
    assert [c.metric for c in cases] == ["ttft_s", "tpot_s", "throughput_per_chip"]
    assert {c.protocol for c in cases} == {"aiperf"}


def test_aiperf_csv_takes_its_load_from_the_setup(tmp_path):
    path = _write(tmp_path, "profile_export_aiperf.csv", bf.aiperf_csv(POINTS[0]))
    (run,) = ingest.read(path)
    assert run.concurrency is None and run.ttft_s == pytest.approx(0.05) and run.isl == 1024
    with pytest.raises(ValueError, match=r"^concurrency: run does not say"):
        against.cases([run], against.Setup(hardware="h100-sxm", model="llama-3.1-8b"), "c")
    cases = against.cases([run], against.Setup(hardware="h100-sxm", model="llama-3.1-8b", concurrency=4), "c")
    assert {c.concurrency for c in cases} == {4}


def test_guidellm_report_one_run_per_benchmark(tmp_path):
    path = _write(tmp_path, "benchmarks.json", json.dumps(bf.guidellm_report(
        [POINTS[0], {**POINTS[1], "concurrency": None, "rate": 3.0}])))
    runs = ingest.read(path)
    assert [(r.tool, r.tool_version) for r in runs] == [("guidellm", "0.7.2")] * 2
    assert (runs[0].concurrency, runs[0].request_rate) == (4, None)
    assert (runs[1].concurrency, runs[1].request_rate) == (None, 3.0)
    assert runs[1].tpot_s == pytest.approx(0.011)  # inter_token_latency_ms, not time_per_output_token_ms
    cases = against.cases(runs, against.Setup(hardware="h100-sxm"), "g")
    assert cases[-1].scenario == "request_rate" and {c.protocol for c in cases} == {"guidellm"}


def _scaled_file(tmp_path: Path, writer, factor: float = 1.3) -> Path:
    """A file whose measurements are tokenomy's own predictions with every time x factor (throughput / factor)."""
    conc = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    seed = [dict(concurrency=c, isl=1024, osl=256, ttft_s=0.05, tpot_s=0.01, itl_s=0.01, output_tokens_per_s=99.0 * c)
            for c in conc]
    pred = {(r["point"], r["metric"]): r["predicted"]
            for r in tk.validate(against=str(_write(tmp_path, "seed.json", writer(seed))), setup=SETUP).rows()}
    scaled = [{**p, "ttft_s": factor * pred[i, "ttft_s"], "tpot_s": factor * pred[i, "tpot_s"],
               "itl_s": factor * pred[i, "tpot_s"], "output_tokens_per_s": pred[i, "throughput_per_chip"] / factor}
              for i, p in enumerate(seed, 1)]
    return _write(tmp_path, "scaled.json", writer(scaled))


@pytest.mark.parametrize("writer", [bf.vllm_file, lambda pts: json.dumps(bf.guidellm_report(pts))])
def test_predictions_slowed_by_1_3_read_as_that_error(tmp_path, writer):
    res = tk.validate(against=str(_scaled_file(tmp_path, writer)), setup=SETUP)
    expected = 1 / 1.3 - 1  # predicted/measured - 1, throughput read as time per token
    assert all(r["error"] == pytest.approx(expected, abs=1e-6) for r in res.rows())
    assert set(res.extra["median_abs_error"]) >= {"ttft_s", "tpot_s", "throughput_per_chip"}


def test_calibration_recovers_most_of_a_uniform_slowdown_on_held_out_points(tmp_path):
    res = tk.calibrate(str(_scaled_file(tmp_path, bf.vllm_file)), setup=SETUP, hold_out=3)
    held = res.extra["held_out_median_abs_error"]
    for metric, before in held["before"].items():
        assert before == pytest.approx(1 - 1 / 1.3, rel=1e-6)
        assert held["after"][metric] < 0.3 * before, (metric, held)
    assert {r["point"] for r in res.rows() if r["split"] == "test"} == {3, 6, 9}
    assert res.extra["refitted"] and "hbm_fraction" not in res.extra["refitted"]  # anchored terms stay


def _cases(metric_runs: list[MeasuredRun]):
    cs = against.cases(metric_runs, against.Setup(hardware="h100-sxm", model="llama-3.1-8b"), "x")
    return prepare_serving(against.wrap(cs, metric_runs, Path("x.json")))


def _run(c: int, isl: int = 2048, **metrics) -> MeasuredRun:
    return MeasuredRun(tool="vllm-bench", tool_version="", label=f"c{c}", model_id=None, tokenizer=None,
                       concurrency=c, request_rate=None, num_prompts=None, isl=isl, osl=512, **metrics)


def test_decode_points_do_not_identify_the_prefill_gemm_share_and_prompt_lengths_do():
    prior = against.terms_for("h100-sxm")["h100-sxm"]
    decode = user_calibrate.identified(_cases([_run(c, tpot_s=0.01) for c in (1, 2, 4)]), prior)
    # memory- and overhead-bound steps: the per-step floors lead (~15-24% of TPOT per unit log); the GEMM share
    # reaches a batch-4 decode only through the overlap loss phi*min(compute, memory) (<1% per unit log at H100's
    # fitted phi 0.43, M_1/2 126), which may clear the identification threshold; the request overhead never does
    assert decode and decode[0] in {"step_overhead_s", "kernel_overhead_s"}
    assert set(decode) <= {"kv_hbm_fraction", "step_overhead_s", "kernel_overhead_s", "sequence_overhead_s",
                           "overlap_loss", "flops_fraction_max", "gemm_half_tokens"}
    # one prompt length: a per-request overhead and the prefill GEMM share move TTFT alike (not separable)
    one = user_calibrate.identified(_cases([_run(c, ttft_s=0.1) for c in (1, 2, 4)]), prior)
    assert "flops_fraction_max" not in one or "request_overhead_s" not in one
    lengths = user_calibrate.identified(_cases([_run(1, isl, ttft_s=0.1) for isl in (256, 4096, 32768)]), prior)
    assert "flops_fraction_max" in lengths and "request_overhead_s" in lengths


def test_a_refitted_term_outside_its_anchored_range_is_named():
    prior = against.terms_for("h100-sxm")["h100-sxm"]
    assert user_calibrate.outside_ranges(prior, ["request_overhead_s", "kv_hbm_fraction"]) == []
    wild = prior.model_copy(update={"request_overhead_s": 5.0})
    (msg,) = user_calibrate.outside_ranges(wild, ["request_overhead_s", "kv_hbm_fraction"])
    assert msg.startswith("request_overhead_s 5 is outside")


def test_the_terms_file_feeds_decode_and_serve(tmp_path):
    out = tmp_path / "terms.toml"
    tk.calibrate(str(_scaled_file(tmp_path, bf.vllm_file)), setup=SETUP, hold_out=3, out=str(out))
    assert "refitted" in out.read_text()
    base = tk.decode("llama-3.1-8b", "h100-sxm", batch=[64], context=[1024]).rows()[0]["step_s"]
    mine = tk.decode("llama-3.1-8b", "h100-sxm", batch=[64], context=[1024], efficiency=str(out)).rows()[0]["step_s"]
    assert mine > base  # the file was slower than predicted: its terms are too
    with pytest.raises(ValueError, match=r"^efficiency: terms.toml was calibrated on h100-sxm"):
        tk.decode("llama-3.1-8b", "b200", batch=[8], context=[1024], efficiency=str(out))


@pytest.mark.parametrize("text, message", [
    ("{not json", r"^against: bad.json: not a benchmark file tokenomy reads"),
    (json.dumps({"completed": 10}), r"^against: bad.json: not a benchmark file"),
    (json.dumps({**bf.vllm_result(POINTS[0]), "total_input_tokens": "many"}),
     r"^against: bad.json: run total_input_tokens is 'many', not a number"),
    (json.dumps({"args": {}, "benchmarks": []}), r"^against: bad.json: benchmarks is empty"),
])
def test_malformed_files_are_one_line_errors_naming_the_argument(tmp_path, text, message):
    path = _write(tmp_path, "bad.json", text)
    with pytest.raises(ValueError, match=message) as e:
        tk.validate(against=str(path), setup=SETUP)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("setup, message", [
    ({}, r"^hardware: required"),
    ({"hardware": "no-such-chip"}, r"^hardware: "),
    ({"hardware": "h100-sxm", "tp": 3, "chips": 4}, r"^chips: 4 is not a multiple of tp 3"),
    ({"hardware": "h100-sxm", "engine": "tgi"}, r"^engine: 'tgi'; allowed"),
    ({"hardware": "h100-sxm", "colour": "red"}, r"^setup: unknown colour"),
    ({"hardware": "h100-sxm", "format": "locust"}, r"^format: 'locust'; allowed"),
    ({"hardware": "h100-sxm", "efficiency": "fast"}, r"^efficiency: 'fast'; allowed"),
    ({"hardware": "h100-sxm", "engine_version": "latest"}, r"^engine_version: 'latest' is not a version"),
])
def test_missing_or_bad_setup_names_the_field(tmp_path, setup, message):
    path = _write(tmp_path, "ok.json", bf.vllm_file(POINTS))
    with pytest.raises(ValueError, match=message):
        tk.validate(against=str(path), setup=setup)


def test_a_model_the_catalog_lacks_asks_for_model(tmp_path):
    d = {**bf.vllm_result(POINTS[0]), "model_id": "acme/TinyChat-3B"}
    path = _write(tmp_path, "m.json", json.dumps(d))
    with pytest.raises(ValueError, match=r"^model: the file names acme/TinyChat-3B, not a catalog model; give --model"):
        tk.validate(against=str(path), setup=SETUP)
    assert len(tk.validate(against=str(path), setup={**SETUP, "model": "llama-3.1-8b"}).rows()) == 4


def test_calibrate_errors_leave_nothing_written(tmp_path):
    out = tmp_path / "terms.toml"
    out.write_text("# the user's earlier terms\n")
    bad = _write(tmp_path, "bad.json", json.dumps({**bf.vllm_result(POINTS[0]), "completed": 0}))
    with pytest.raises(ValueError, match=r"^measured: bad.json: run completed must be a positive number"):
        tk.calibrate(str(bad), setup=SETUP, out=str(out))
    two = _write(tmp_path, "two.json", bf.vllm_file(POINTS))
    with pytest.raises(ValueError, match=r"^hold_out: holding out every 3rd of 2 points leaves none held out"):
        tk.calibrate(str(two), setup=SETUP, hold_out=3, out=str(out))
    with pytest.raises(ValueError, match=r"^hold_out: .* k must be an integer >= 2"):
        tk.calibrate(str(two), setup=SETUP, hold_out=1)
    with pytest.raises(ValueError, match=r"^out: .* must be a .toml file in an existing folder"):
        tk.calibrate(str(two), setup=SETUP, hold_out=2, out=str(tmp_path / "nowhere" / "t.toml"))
    from tokenomy.catalog import loader

    inside = loader.catalog_path("efficiency", "mine")
    with pytest.raises(ValueError, match=r"^out: .* is inside the package catalog"):
        tk.calibrate(str(two), setup=SETUP, hold_out=2, out=str(inside))
    assert not inside.exists()
    assert out.read_text() == "# the user's earlier terms\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "terms.toml", "two.json"]


def test_a_point_the_model_says_cannot_run_is_reported_not_guessed(tmp_path):
    path = _write(tmp_path, "big.json", bf.vllm_file([{**POINTS[0], "concurrency": 8}]))
    rows = tk.validate(against=str(path), setup={**SETUP, "model": "llama-3.1-405b"}).rows()
    assert all(math.isnan(r["predicted"]) for r in rows)  # 405B in bf16 does not fit one H100
