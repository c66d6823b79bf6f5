"""AMD cases carry the engine settings their sources state (a row without them ran under the engine's defaults: a
case record that did not match its source). The ROCm vLLM dev-docker throughput rows (benchmark_throughput.py,
1,500-3,200 prompts): the step budget the note names (--max-num-batched-tokens 131072) and the scheduler cap the
published cell names ('max num seqs N'). InferenceX's Llama-70B MI300X/MI355X vLLM rows: --gpu-memory-utilization
0.94 and --max-num-seqs (C on MI300X, 1024 on MI355X) as the note reads them from benchmarks/70b_*.sh."""

import re

from tokenomy.catalog import loader

SOURCES = ("rocm-vllm-0.10-mi300x", "rocm-vllm-0.7.3-mi300x")


def _file(source: str) -> dict:
    return loader.read_toml("validation", source)


def _throughput_rows(source: str) -> tuple[dict, list[dict]]:
    data = _file(source)
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


def test_inferencex_llama70b_amd_rows_carry_the_recipe_memory_share_and_cap():
    data = _file("inferencex-blog-llama70b-best-gpu")
    note = data["source"]["note"]
    assert "MI300X --max-num-seqs C, fp8 KV, 0.94; MI355X --max-num-seqs 1024, fp8 KV, 0.94" in note
    rows = [r for r in data["serving"] if r["hardware"] in ("mi300x", "mi355x")]
    assert len(rows) == 8
    for r in rows:
        assert r["gpu_memory_utilization"] == 0.94, r["id"]
        assert r["max_batch"] == (r["concurrency"] if r["hardware"] == "mi300x" else 1024), r["id"]
