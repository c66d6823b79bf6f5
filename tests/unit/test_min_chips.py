"""answers.sizing.min_chips (issue 30: GenZ's "minimum chips" table): the count it names meets the use case's SLOs
on serve's own answer and half of it does not; a tighter SLO never needs fewer chips; bad input names its field."""

import pytest

from tokenomy.answers.sizing import USE_CASES, min_chips
from tokenomy.answers.workloads import serve

MODEL, HW = "llama-3.1-70b", "h100-sxm"


@pytest.fixture(scope="module")
def table():
    return {r["use_case"]: r for r in min_chips(MODEL, HW, concurrency=16, max_chips=64).rows()}


def _meets(n, u, c=16):
    try:
        r = serve(MODEL, HW, concurrency=[c], isl=u.isl, osl=u.osl, chips=n).rows()[0]
    except ValueError:
        return False  # does not fit
    return (not r["capacity_limited"] and (u.ttft_slo_s is None or r["ttft_s"] <= u.ttft_slo_s)
            and (u.tpot_slo_s is None or r["tpot_s"] <= u.tpot_slo_s))


def test_every_use_case_has_a_row_with_its_source(table):
    assert set(table) == set(USE_CASES)
    for name, r in table.items():
        assert "mlperf.conf" in r["source"] and "illustrative" in r["source"], name


@pytest.mark.parametrize("name", ["chat", "rag", "agent"])
def test_the_count_meets_the_slos_and_half_of_it_does_not(table, name):
    r, u = table[name], USE_CASES[name]
    assert r["min_chips"] is not None, r["why"]
    assert r["ttft_s"] <= u.ttft_slo_s and r["tpot_s"] <= u.tpot_slo_s
    assert _meets(r["min_chips"], u)
    assert r["min_chips"] == 1 or not _meets(r["min_chips"] // 2, u)
    assert r["chips_to_fit"] <= r["min_chips"]


def test_a_70b_model_does_not_fit_one_80gb_chip(table):
    # 70.6e9 params x 2 B (bf16) = 141 GB of weights > one H100's 80 GB
    assert all(r["chips_to_fit"] >= 2 for r in table.values())


def test_more_users_never_need_fewer_chips(table):
    more = min_chips(MODEL, HW, use_case="chat", concurrency=128, max_chips=64).rows()[0]
    assert more["min_chips"] is not None and more["min_chips"] >= table["chat"]["min_chips"]
    assert _meets(more["min_chips"], USE_CASES["chat"], 128)


def test_too_few_chips_says_why():
    r = min_chips("llama-3.1-405b", HW, use_case="chat", max_chips=4).rows()[0]
    assert r["min_chips"] is None and r["why"] == "does not fit on 4 chips or fewer"


@pytest.mark.parametrize("kw, field", [({"use_case": "chatt"}, "use_case"), ({"max_chips": 0}, "max_chips"),
                                       ({"concurrency": "1,2"}, "concurrency"), ({"engine": "nope"}, "engine")])
def test_bad_input_names_the_field(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}"):
        min_chips(MODEL, HW, **kw)
