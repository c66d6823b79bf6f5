"""serve and plan under SLOs: one rule for goodput (plan_serving.meets: an open loop beyond capacity meets nothing,
a closed loop beyond capacity counts on its queued TTFT), and "no point meets" answered as plan answers it — the
points, a line naming the closest and by how much it misses, exit 0."""

import json

import pytest
from cli_runner import CliRunner

from tokenomy.answers.plan_serving import goodput_requests_per_s, meets, with_goodput
from tokenomy.answers.workloads import serve
from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

LLAMA = dict(model="llama-3.1-70b", hardware="hgx-h100-8", isl=1024, osl=1024)
DISAGG = dict(mode="disagg", pools=dict(prefill_chips=4, decode_chips=4, prefill_tp=4, decode_tp=4))
CLI = ["serve", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8"]


@pytest.mark.parametrize("kw", [{}, DISAGG])
def test_an_open_loop_beyond_capacity_has_no_goodput_even_under_a_tpot_slo_alone(kw):
    row, = serve(**LLAMA, rate=[40.0], tpot_slo=1.0, **kw).rows()
    assert row["capacity_limited"] and row["requests_per_s"] > 0 and row["tpot_s"] < 1.0
    assert row["goodput_requests_per_s"] == 0.0 and not meets(row, None, 1.0)


@pytest.mark.parametrize("kw", [{}, DISAGG])
def test_a_closed_loop_beyond_capacity_counts_on_its_queued_ttft(kw):
    ok, = serve(**LLAMA, concurrency=[4096], tpot_slo=1.0, **kw).rows()
    assert ok["capacity_limited"] and ok["queue_s"] > 0
    assert ok["goodput_requests_per_s"] == pytest.approx(ok["requests_per_s"]) and meets(ok, None, 1.0)
    late, = serve(**LLAMA, concurrency=[4096], ttft_slo=1.0, tpot_slo=1.0, **kw).rows()
    assert late["ttft_s"] > 1.0 and late["goodput_requests_per_s"] == 0.0  # the wait is in its TTFT


@pytest.mark.parametrize("kw", [{}, DISAGG])
def test_serve_and_plan_count_goodput_by_one_function(kw):
    for load in (dict(concurrency=[4, 4096]), dict(rate=[0.5, 40.0])):
        for slos in ((None, 0.05), (1.0, 0.05), (0.01, None)):
            for row in serve(**LLAMA, **load, ttft_slo=slos[0], tpot_slo=slos[1], **kw).rows():
                planned = with_goodput(row, 2.0, *slos)
                assert planned["goodput_requests_per_s"] == row["goodput_requests_per_s"]
                assert planned["meets_slos"] == (row["goodput_requests_per_s"] > 0)


def test_a_simulated_open_loop_beyond_capacity_has_no_goodput_though_its_first_requests_met_the_slo():
    row, = serve(**LLAMA, rate=[40.0], ttft_slo=10.0, method="simulate", requests=300).rows()
    assert row["capacity_limited"] and row["ttft_p50_s"] < 60.0
    assert row["goodput_requests_per_s"] == 0.0


class _Sim:
    def goodput(self, ttft_slo, tpot_slo):
        return 7.0


def test_a_simulation_counts_its_own_requests_below_capacity():
    row = {"capacity_limited": False, "concurrency": 8.0, "ttft_s": 9.0, "tpot_s": 9.0, "requests_per_s": 1.0}
    assert goodput_requests_per_s(row, 1.0, None, _Sim()) == 7.0  # the requests within the SLOs, not the mean
    assert goodput_requests_per_s(row, None, None, _Sim()) == 1.0


@pytest.mark.parametrize("kw", [{}, DISAGG])
def test_no_point_meets_is_an_answer_naming_the_closest_and_its_miss(kw):
    r = serve(**LLAMA, concurrency=[4, 64], ttft_slo=0.001, **kw)
    assert len(r.rows()) == 2 and all(x["goodput_requests_per_s"] == 0 for x in r.rows())
    note = r.notes[0]
    assert note.startswith("no workload point meets the SLOs; closest:") and "at concurrency 4" in note
    assert "% over" in note and r.extra["closest"]["concurrency"] == 4
    assert r.extra["misses_by"]["ttft_over"] > 1


@pytest.mark.parametrize("extra", [[], ["--mode", "disagg", "--prefill-chips", "4", "--decode-chips", "4",
                                        "--prefill-tp", "4", "--decode-tp", "4"]])
def test_cli_prints_the_points_and_the_line_and_exits_0(extra):
    r = CliRunner().invoke(app, CLI + ["--concurrency", "4,64", "--ttft-slo", "0.001"] + extra)
    assert r.exit_code == 0, r.output
    assert "no workload point meets the SLOs; closest:" in " ".join(r.stdout.split()) and "% over" in r.stdout
    j = CliRunner().invoke(app, CLI + ["--concurrency", "4,64", "--ttft-slo", "0.001", "--json"] + extra)
    assert j.exit_code == 0 and [x["concurrency"] for x in json.loads(j.stdout)] == [4, 64]


def test_slos_some_point_meets_add_no_line():
    r = serve(**LLAMA, concurrency=[4, 64], ttft_slo=10.0)
    assert not any("meets the SLOs" in n for n in r.notes) and "closest" not in r.extra
