"""One grammar, three doors: the same strings go to ``tokenomy decode --context``, ``/api/decode?context=`` and
``tk.decode(context=...)``; each door accepts exactly the same ones, with the same parsed contexts, and refuses the
rest naming the field (CLI: exit 2, one line; web: 422 with the field; Python: ValueError starting 'context:')."""

from __future__ import annotations

import json

import pytest
from cli_runner import CliRunner

import tokenomy as tk
from tokenomy.cli import app, commands  # noqa: F401  (registers every command)

MODEL, HW = "llama-4-maverick", "gb200-nvl72"  # a 1,048,576-token window: 1M is inside it
STRINGS = ["128k", "8,192", "abc", "inf", "1e400", "", "-1", "0", "1..4096", "1k..1M:8log", "2048, 8k",
           "1..4096:1024", "1M", "1.5k", "8, 192", "1_000", "0x10", "4097..4096", "1..2:0"]
ACCEPTED = {  # the contexts each valid string means (module docstring of answers/inputs), worked by hand
    "128k": [131072], "1..4096": [2**i for i in range(13)], "2048, 8k": [2048, 8192],
    "1..4096:1024": [1, 1025, 2049, 3073], "1M": [1048576], "1.5k": [1536], "8, 192": [8, 192],
    "1k..1M:8log": [1024, 2756, 7420, 19972, 53761, 144715, 389544, 1048576],  # 2^(10 + 10 i / 7), rounded
}


def cli(text: str) -> tuple[bool, list[int] | str]:
    r = CliRunner().invoke(app, ["decode", "--model", MODEL, "--hardware", HW, "--batch", "1", "--context", text,
                                 "--json"])
    if r.exit_code == 0:
        return True, [row["context"] for row in json.loads(r.output)]
    out = r.output.strip()
    assert r.exit_code == 2 and len(out.splitlines()) == 1 and "--context" in out, (text, r.exit_code, out)
    return False, out


def web(client, text: str) -> tuple[bool, list[int] | str]:
    r = client.get("/api/decode", params={"model": MODEL, "hardware": HW, "batch": "1", "context": text})
    if r.status_code == 200:
        return True, [row["context"] for row in r.json()]
    d = r.json()["detail"][0]
    assert r.status_code == 422 and d["loc"][-1] == "context", (text, r.status_code, d)
    return False, d["msg"]


def python(text: str) -> tuple[bool, list[int] | str]:
    try:
        res = tk.decode(MODEL, HW, batch=1, context=text)
    except ValueError as e:
        assert str(e).startswith("context: ") and "\n" not in str(e), (text, str(e))
        return False, str(e)
    return True, [row["context"] for row in res.rows()]


@pytest.mark.parametrize("text", STRINGS)
def test_three_doors_accept_and_refuse_the_same_strings(client, text):
    doors = {"cli": cli(text), "web": web(client, text), "python": python(text)}
    accepted = {name: ok for name, (ok, _) in doors.items()}
    assert len(set(accepted.values())) == 1, (text, doors)
    if text in ACCEPTED:
        for name, (ok, contexts) in doors.items():
            assert ok and contexts == ACCEPTED[text], (name, text, contexts)
    else:
        assert not any(accepted.values()), (text, doors)


def test_the_issues_log_range_is_one_decision_at_three_doors(client):
    """1k..1M:256log: 256 contexts at every door (the web's budget is 1,024 points a request, web/query.budget);
    a range past the budget is the web's refusal alone, naming the list and the budget."""
    doors = {"cli": cli("1k..1M:256log"), "web": web(client, "1k..1M:256log"), "python": python("1k..1M:256log")}
    contexts = [c for _, c in doors.values()]
    assert all(ok for ok, _ in doors.values()) and len(contexts[0]) == 256, doors
    assert contexts[0] == contexts[1] == contexts[2] and contexts[0][0] == 1024 and contexts[0][-1] == 2**20
    ok, msg = web(client, "1..2048:1")
    assert not ok and "2,048 values; the web answers at most 1,024 points a request" in msg
    assert cli("1..2048:1")[0] and python("1..2048:1")[0]


def test_the_ambiguous_thousands_get_the_hint_at_every_door(client):
    for ok, msg in (cli("8,192"), web(client, "8,192"), python("8,192")):
        assert not ok and "did you mean 8192?" in msg


# ---- every option the CLI and /api share, from their registries ------------------------------------------------
from tokenomy.answers import inputs  # noqa: E402
from tokenomy.web import params as P  # noqa: E402

from .three_doors import BASES, cli as cli_door, names_field, python as py_door, shared_options, web as web_door  # noqa: E402,I001

NUMBER_KINDS = ("int", "float", "number", "int_list", "float_list")
NAME_KINDS = ("choice", "dtype", "model", "hardware", "text")
SHARED = shared_options()


def number_strings(name: str, opt) -> list[tuple[str, bool]]:
    """(text, refused by the grammar) for one numeric field beside its value inside the bound (``inside``): a word,
    the thousands trap, past the row's bound, a list, a range and a log range (which a one-value field refuses)."""
    f = inputs.field_of(name)
    lists = opt.kind.endswith("_list")
    out = [("abc", True), ("8,192", True), (str(int(f.hi * 4)) if f.whole else f"{f.hi * 4:g}", True)]
    one = max(f.lo, 1)
    if f.admits(one):
        a, b = inputs.readable(one), inputs.readable(min(f.hi, 4 * one))
        out += [(f"{a}, {b}", not lists), (f"{a}..{b}", not lists), (f"{a}..{b}:3log", not lists)]
    return out


def inside(name: str, default) -> str:
    """The option's default (or 1 where it has none) written the grammar's way: 4096 as 4k."""
    x = (default[0] if default else None) if isinstance(default, (list, tuple)) else default
    x = 1 if not isinstance(x, (int, float)) or isinstance(x, bool) or not inputs.field_of(name).admits(x) else x
    return f"{int(x) // 1024}k" if 1024 <= x < 2**30 and x % 1024 == 0 else f"{x:g}"


# every option both doors share and the strings each is fed: a number field's (number_strings), "bogus" for a name
OPTIONS = {(q, n): number_strings(n, o) if o.kind in NUMBER_KINDS else [("bogus", True)]
           for q, opts in SHARED.items() for n, o in opts.items()
           if o.kind in NUMBER_KINDS + NAME_KINDS and n not in BASES.get(q, {})}
# question -> {option: its value inside the bound}, every numeric option of the question
INSIDE = {q: {n: inside(n, o.default) for n, o in opts.items() if o.kind in NUMBER_KINDS and n not in BASES.get(q, {})}
          for q, opts in SHARED.items()}


def agree(client, question: str, params: dict, name: str | None, refused: bool | None = None):
    """The three doors on ``params``: (accepted, {door: its answer or refusal}), asserting they accept or refuse
    alike, and (``refused``) that the grammar's refusal is every door's, naming ``name``."""
    doors = {"cli": cli_door(question, params, name), "web": web_door(client, question, params, name),
             "python": py_door(question, params, name)}
    accepted = {door: ok for door, (ok, _) in doors.items()}
    assert len(set(accepted.values())) == 1, (question, params, doors)
    if refused:
        assert not any(accepted.values()), (question, name, params, doors)
        for door, (_, out) in doors.items():
            assert names_field(door, out, name), (door, question, name, params, out)
    return accepted["cli"], doors


def test_every_shared_question_has_a_base():
    assert set(SHARED) <= set(BASES), set(SHARED) - set(BASES)


@pytest.mark.parametrize("question, name", list(OPTIONS), ids=[f"{q}-{n}" for q, n in OPTIONS])
def test_every_shared_option_reads_the_same_at_three_doors(client, question, name):
    """Each string of the option (OPTIONS), fed to the three doors beside the question's base: accepted by all or
    by none; the grammar's refusals refused by all three, naming the option. Its value inside the bound:
    test_every_option_inside_its_bound_is_accepted_at_three_doors."""
    for text, grammar_refuses in OPTIONS[question, name]:
        agree(client, question, {**BASES[question], name: text}, name, grammar_refuses)


@pytest.mark.parametrize("question", [q for q in SHARED if INSIDE[q]])
def test_every_option_inside_its_bound_is_accepted_at_three_doors(client, question):
    """Every numeric option of the question at its value inside the bound (INSIDE), as many at once as the answer
    takes: one answer a door for a set of options instead of one an option (an answer is most of a door's time).
    The doors accept a set or refuse it alike; a set all three refuse (options that exclude each other, as
    concurrency and rate, or a value the answer refuses, as redundant experts on a dense model) is halved and each
    half given again, down to single options, which the doors must take or refuse alike as before."""
    def alike(names: list[str]) -> None:
        ok, _ = agree(client, question, {**BASES[question], **{n: INSIDE[question][n] for n in names}}, None)
        if not ok and len(names) > 1:
            alike(names[:len(names) // 2])
            alike(names[len(names) // 2:])

    alike(list(INSIDE[question]))


@pytest.mark.parametrize("name, text", [("isl", "2k"), ("osl", "7"), ("cache_hit", "0.5"), ("ttft_slo", "1")])
def test_a_session_workload_refuses_steady_traffics_options_at_three_doors(client, name, text):
    """Sessions draw their own turns' lengths and hits: --isl 2k beside --workload agentic was silently ignored."""
    params = {**BASES["serve"], "workload": "agentic", name: text}
    doors = {"cli": cli_door("serve", params, name), "web": web_door(client, "serve", params, name),
             "python": py_door("serve", params, name)}
    for door, (ok, out) in doors.items():
        assert not ok and names_field(door, out, name), (door, out)


def test_a_serve_request_names_the_key_it_would_drop():
    from tokenomy.answers.requests import ServeRequest

    with pytest.raises(ValueError, match=r"^bogus_key: not a key of a serve request"):
        ServeRequest.of(MODEL, HW, {"bogus_key": 5, "concurrency": [8]})
    with pytest.raises(ValueError, match=r"^workload: .*tk\.serve\(workload=\.\.\.\)"):
        ServeRequest.of(MODEL, HW, {"workload": "agentic", "concurrency": [8]})


def test_a_list_for_a_one_value_keyword_is_refused_by_name():
    # (nvme_bytes, dram_bytes and think_s are a session sweep's axes: tests/sweep/test_sweep_sessions.py)
    with pytest.raises(ValueError, match=r"^turns: one value here, not a list of 2$"):
        tk.sweep(model="llama-3.2-1b", hardware="hgx-h100-8", concurrency=[8], workload="agentic",
                 kv_tiering="lmcache", turns=[4, 8])
