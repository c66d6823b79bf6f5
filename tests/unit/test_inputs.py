"""The one grammar (answers/inputs.py): numbers, suffixes, lists, ranges, the ambiguous thousands, bounds; and the
door every public answer goes through (answers/door.py): its signature, its options, its keyword names."""

from __future__ import annotations

import inspect

import pytest

import tokenomy as tk
from tokenomy.answers import inputs
from tokenomy.answers.inputs import InputError, number, numbers


@pytest.mark.parametrize("text, want", [
    ("8192", 8192), (" 8192 ", 8192), ("8e3", 8000), ("128k", 131072), ("128K", 131072), ("1M", 1048576),
    ("1m", 1048576), ("1.5k", 1536), ("+4", 4), ("4096.0", 4096)])
def test_whole_numbers_with_suffixes(text, want):
    got = number("context", text)
    assert got == want and type(got) is int
    assert number("tokens", "1G") == 2**30 and type(number("tokens", "1G")) is float  # a field of any number


@pytest.mark.parametrize("text, says", [
    ("", "empty"), ("abc", "is not a number"), ("inf", "is not a number"), ("nan", "is not a number"),
    ("1e400", "not a finite number"), ("-1", "out of range [1, 16,777,216]"), ("0", "out of range"),
    ("0.5", "not a whole number"), ("1.0001k", "not a whole number"), ("1_000", "is not a number"),
    ("0x10", "is not a number"), ("2k..4k", "one value here"), ("8,192", "did you mean 8192?"), ("1,5", "one value"),
    ("32M", "out of range")])
def test_refusals_name_the_field_and_what_is_allowed(text, says):
    with pytest.raises(InputError, match=r"^context: ") as e:
        number("context", text)
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text, want", [
    ("1,64,256", [1, 64, 256]), ("1..4096", [2**i for i in range(13)]), ("3..20", [3, 6, 12]),
    ("1..4096:1024", [1, 1025, 2049, 3073]), ("0..1:0.25", [0.0, 0.25, 0.5, 0.75, 1.0]),
    ("1k..1M:3log", [1024, 32768, 1048576]), ("1..4:8log", [1, 2, 3, 4]), ("256,512", [256, 512]),
    ("64,128", [64, 128]), ("8, 192", [8, 192]), ("1,,4", [1, 4]), ("2k, 1..4", [2048, 1, 2, 4])])
def test_lists_and_ranges(text, want):
    name = "acceptance" if "0.25" in text else "batch"
    assert numbers(name, text) == want


@pytest.mark.parametrize("text", ["8,192", "1,024", "128,000", "3,072", "1,000,000", "16,384"])
def test_one_round_number_with_a_separator_is_ambiguous(text):
    with pytest.raises(InputError, match=rf"did you mean {text.replace(',', '')}\?"):
        numbers("context", text)


@pytest.mark.parametrize("text, says", [
    ("", "empty"), (",", "empty"), ("4..2", "a <= b"), ("0..8", "start above 0"), ("1..8:0", "step must be > 0"),
    ("1..8:1log", "N >= 2"), ("1..8:2.5log", "whole N"), ("1..2:1e-9", "values; at most 1,048,576"),
    ("1,abc", "'abc' is not a number"), ("1,2000000", "out of range [1, 1,048,576]")])
def test_bad_lists(text, says):
    with pytest.raises(InputError, match=r"^batch: ") as e:
        numbers("batch", text)
    assert says in str(e.value)


def test_python_values_take_the_same_bounds():
    assert numbers("batch", [1, 8.0, "2k"]) == [1, 8, 2048] and number("hop_latency", 0.5) == 0.5
    for bad in (float("inf"), -1, True, None, [1, [2]]):
        with pytest.raises(InputError, match=r"^batch: "):
            numbers("batch", bad)


def test_every_bound_is_read_by_people():
    for name, f in inputs.FIELDS.items():
        assert f.lo < f.hi and "e+" not in str(f), name


def test_machine_memory_bounds_a_request_count(monkeypatch):
    monkeypatch.setattr(inputs, "available_memory_bytes", lambda: 2.0**30)
    inputs.within_memory("requests", 1000, 512, "simulated requests")
    with pytest.raises(InputError, match=r"^requests: 4,000,000 simulated requests need about 1.9 GiB .* at most "
                                         r"2,097,152"):
        inputs.within_memory("requests", 4_000_000, 512, "simulated requests")


def test_available_memory_is_read_from_the_machine():
    assert 2**20 < inputs.available_memory_bytes() < 2**50


# ---- the door: what help(tk.decode) shows, what a misspelt keyword says, strings as the CLI takes them ----------

def test_public_functions_show_their_options():
    for name in ("decode", "prefill", "serve", "plan", "batch", "latency", "pricing", "train", "rl", "lifecycle"):
        fn = getattr(tk, name)
        params = inspect.signature(fn).parameters
        assert not any(p.kind is p.VAR_KEYWORD for p in params.values()), name
        doc = inspect.getdoc(fn)
        assert "Options" in doc, name
        for p in params.values():
            if p.name in inputs.FIELDS:
                assert f"{p.name}: " in doc and str(inputs.FIELDS[p.name]) in doc, (name, p.name)
    assert {"tp", "hop_latency", "weight_dtype", "chips"} <= set(inspect.signature(tk.decode).parameters)
    assert {"tp", "usd_per_chip_hour"} <= set(inspect.signature(tk.batch).parameters)


@pytest.mark.parametrize("fn, kw, says", [
    ("decode", {"contxt": 2048}, "tk.decode() got an unexpected keyword 'contxt' (did you mean 'context'?)"),
    ("serve", {"concurency": 4}, "tk.serve() got an unexpected keyword 'concurency' (did you mean 'concurrency'?)"),
    ("batch", {"ctx": 4}, "tk.batch() got an unexpected keyword 'ctx'")])
def test_a_misspelt_keyword_names_the_public_function(fn, kw, says):
    args = ("llama-3.1-8b", "h100-sxm") if fn != "batch" else ()
    with pytest.raises(TypeError) as e:
        getattr(tk, fn)(*args, **kw)
    assert str(e.value).startswith(says)


def test_strings_as_the_cli_takes_them():
    a = tk.serve("llama-3.1-8b", "h100-sxm", concurrency="1,4", isl="4k", osl="1k").rows()
    b = tk.serve("llama-3.1-8b", "h100-sxm", concurrency=[1, 4], isl=4096, osl=1024).rows()
    assert [r["ttft_s"] for r in a] == [r["ttft_s"] for r in b] and len(a) == 2
    with pytest.raises(ValueError, match=r"^hop_latency: -1 is out of range \[0, 10\]"):
        tk.decode("llama-3.1-8b", "h100-sxm", hop_latency=-1)
    with pytest.raises(ValueError, match=r"^seed: -1 is out of range"):
        tk.serve("llama-3.1-8b", "h100-sxm", concurrency=4, method="simulate", seed=-1)
