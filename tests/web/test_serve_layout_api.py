"""/api/serve takes decode's layout flags (attn_dp, kv_batch) and weight_dtype=checkpoint, and refuses a layout
that is not valid with decode's reason (422), as `tokenomy serve` and tk.serve do (issue 25, item 9;
tests/cli/test_serve_layout_flags.py)."""


def test_api_serve_takes_the_layout_flags_and_checkpoint(client):
    base = {"model": "deepseek-v3", "hardware": "hgx-h200-8", "concurrency": "64"}
    r = client.get("/api/serve", params={**base, "tp": "8", "kv_batch": "true"})
    assert r.status_code == 200, r.text[:300]
    assert r.json()[0]["plan"] == "tp8 ep1 pp1 dp1 kv-batch"
    r = client.get("/api/serve", params={**base, "tp": "1", "ep": "8", "attn_dp": "false",
                                         "weight_dtype": "checkpoint"})
    assert r.status_code == 200, r.text[:300]
    assert r.json()[0]["plan"] == "tp1 ep8 pp1 dp1 attn-tp"
    r = client.get("/api/serve", params={"model": "llama-3.1-70b", "hardware": "hgx-h100-8", "concurrency": "8",
                                         "tp": "3"})
    assert r.status_code == 422 and "does not divide the attention heads" in r.text
