"""kv_dtype=auto on /api/serve (what the workload page's form and JSON link send by default) means the engine's KV
dtype for the weights, as `tokenomy serve` without --kv-dtype; a dtype name still wins, a bad one is a 422."""

BASE = {"model": "llama-3.1-70b", "hardware": "h100-sxm", "chips": "2", "tp": "2", "concurrency": "8",
        "weight_dtype": "fp8"}


def _b_kv(client, **kw) -> float:
    r = client.get("/api/serve", params={**BASE, **kw})
    assert r.status_code == 200, r.text
    return r.json()[0]["b_kv"]


def test_auto_is_the_engines_kv_dtype(client):
    # trtllm with fp8 weights keeps an fp8 cache: twice the sequences of its bf16 one; vLLM's auto is bf16
    fp8, bf16 = _b_kv(client, engine="trtllm", kv_dtype="auto"), _b_kv(client, engine="trtllm", kv_dtype="bf16")
    assert fp8 == _b_kv(client, engine="trtllm", kv_dtype="fp8") and abs(fp8 / bf16 - 2) < 0.1
    assert _b_kv(client, engine="vllm", kv_dtype="auto") == _b_kv(client, engine="vllm", kv_dtype="bf16")


def test_a_bad_kv_dtype_is_still_refused(client):
    r = client.get("/api/serve", params={**BASE, "kv_dtype": "fp7"})
    assert r.status_code == 422 and "kv_dtype" in r.text
