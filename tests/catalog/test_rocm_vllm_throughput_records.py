"""The ROCm vLLM dev-docker throughput rows (benchmark_throughput.py, 1,500-3,200 prompts) carry the settings their
source states for them: the step budget its note names (--max-num-batched-tokens 131072: unrecorded, the rows ran
under vLLM's default budget, a case record that did not match its source) and the scheduler cap the published cell
names ('max num seqs N')."""

import re
import tomllib
from pathlib import Path

from tokenomy.catalog import loader

SOURCES = ("rocm-vllm-0.10-mi300x", "rocm-vllm-0.7.3-mi300x")


def _throughput_rows(source: str) -> tuple[dict, list[dict]]:
    data = tomllib.loads((Path(loader.ROOT) / "validation" / f"{source}.toml").read_text())
    return data["source"], [r for r in data["serving"] if r.get("metric") == "throughput_per_chip"]


def test_throughput_rows_carry_the_budget_their_note_states():
    for source in SOURCES:
        meta, rows = _throughput_rows(source)
        budget = int(re.search(r"--max-num-batched-tokens (\d+)", meta["note"]).group(1))
        assert rows and budget == 131072, source
        for r in rows:
            assert r.get("max_num_tokens") == budget, r["id"]


def test_throughput_rows_carry_the_published_scheduler_cap():
    for source in SOURCES:
        for r in _throughput_rows(source)[1]:
            assert r["max_batch"] == int(re.search(r"max num seqs (\d+)", r["published"]).group(1)), r["id"]
