"""CLI tables speak people's headers (issue 30: TTFT, TPOT, tok/s/chip, $/Mtok in/out), from the one table
tokenomy.headers; JSON and CSV keep the field names."""

import csv
import io
import json
import re

from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401  (registers the commands)
from tokenomy.cli.app import app
from tokenomy.headers import HEADERS, header

SERVE = ["serve", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--concurrency", "16,64", "--isl", "2k",
         "--osl", "500"]


def run(*args):
    r = CliRunner().invoke(app, ["--wide", *args])
    assert r.exit_code == 0, r.output
    return r.stdout


def test_serve_table_shows_people_headers_not_field_names():
    out = run(*SERVE)
    words = " ".join(out.split())
    for h in ("TTFT", "TPOT", "tok/s/chip", "tok/s/user", "$/Mtok in", "$/Mtok out", "KV occupancy"):
        assert all(w in out for w in h.split()), h
    for field in ("ttft_s", "tpot_s", "tokens_per_s", "usd_per_mtok", "kv_occupancy"):
        assert field not in words, field


def test_json_and_csv_keep_the_field_names():
    rows = json.loads(run(*SERVE, "--json"))
    assert {"ttft_s", "tpot_s", "tokens_per_s_per_chip", "usd_per_mtok_output"} <= set(rows[0])
    head = next(csv.reader(io.StringIO(run(*SERVE, "--csv"))))
    assert "usd_per_mtok_input" in head and "TTFT" not in head


def test_every_column_of_the_main_answers_has_a_header_of_its_own():
    """decode's and serve's table columns are all in the table (no field shown by the name fallback)."""
    from tokenomy.answers.passes import decode
    from tokenomy.answers.workloads import serve

    cols = list(decode("llama-3.1-8b", "h100-sxm", batch=[1]).columns)
    cols += list(serve("llama-3.1-8b", "h100-sxm", concurrency=[4]).columns)
    missing = [c for c in cols if "_" in c and c not in HEADERS]
    assert not missing, missing


def test_fallback_drops_the_unit_suffix():
    assert header("prefill_s") == "prefill" and header("kv_per_token_bytes") == "kv per token"
    assert header("hbm_usd") == "hbm ($)" and header("tokens_per_s") == "tokens per s"


def test_record_tables_name_fields_by_their_headers():
    out = run("hardware", "h100-sxm")
    assert "HBM bandwidth" in out and "peak bf16" in out and "hbm_bytes_per_s" not in out
    assert json.loads(run("hardware", "h100-sxm", "--json"))["hbm_bytes_per_s"] == 3.35e12


def test_every_shown_field_carries_its_unit_last():
    """The cell's unit is read from the end of the field's name (formatting.fmt_cell): a time written
    ``step_s_at_operating`` printed as a bare 0.0494; every field a table shows ends in its unit or is a rate."""
    import re

    misplaced = [f for f in HEADERS if re.search(r"_s_(?!per_)", f)]
    assert not misplaced, misplaced


def test_batch_summary_prints_the_operating_step_as_a_time():
    out = run("batch", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8")
    line = next(ln for ln in out.splitlines() if "step at operating batch" in ln)
    assert re.search(r"\d ms", line), line
