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


def test_the_ambiguous_thousands_get_the_hint_at_every_door(client):
    for ok, msg in (cli("8,192"), web(client, "8,192"), python("8,192")):
        assert not ok and "did you mean 8192?" in msg
