"""emit= on the web: /api/plan and /api/serve carry the launch blocks, the Plan and Serve pages show the "launch
command" block, a plan the engine cannot run is a 422 naming emit (page and API); in a real browser the Plan page's
block shows with a copy button that puts the command on the clipboard."""

from __future__ import annotations

from .browsing import settle


def test_api_plan_and_serve_carry_launch(client):
    r = client.get("/api/plan", params={"model": "llama-3.1-8b", "hardware": "h100-sxm", "chips": "4",
                                        "concurrency": "16", "emit": "vllm"})
    assert r.status_code == 200, r.text
    (block,) = r.json()["launch"]
    assert block["argv"][:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B"]
    r = client.get("/api/serve", params={"model": "llama-3.1-8b", "hardware": "hgx-h100-8", "concurrency": "8",
                                         "tp": "2", "emit": "dynamo"})
    assert r.status_code == 200, r.text
    assert [b["pool"] for b in r.json()["launch"]] == ["router", "serve"]


def test_refusals_are_422_naming_emit(client):
    r = client.get("/api/serve", params={"model": "qwen3-30b-a3b", "hardware": "hgx-h100-8", "concurrency": "8",
                                         "tp": "2", "ep": "4", "emit": "vllm"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "emit"
    r = client.get("/serve", params={"model": "qwen3-30b-a3b", "hardware": "hgx-h100-8", "batch": "8", "tp": "2",
                                     "ep": "4", "emit": "vllm"})
    assert r.status_code == 422 and "keeps each expert whole" in r.text
    r = client.get("/plan", params={"model": "llama-3.1-8b", "hardware": "h100-sxm", "emit": "nope"})
    assert r.status_code == 422 and "allowed: vllm, sglang, trtllm, dynamo" in r.text


def test_pages_show_the_block(client):
    r = client.get("/plan", params={"model": "llama-3.1-8b", "hardware": "h100-sxm", "chips": "4", "emit": "vllm"})
    assert r.status_code == 200 and 'id="launch"' in r.text and "vllm serve meta-llama/Llama-3.1-8B" in r.text
    r = client.get("/serve", params={"model": "llama-3.1-8b", "hardware": "hgx-h100-8", "batch": "8", "tp": "2",
                                     "emit": "sglang"})
    assert r.status_code == 200 and "--tp-size 2" in r.text and 'class="copy"' in r.text
    assert 'id="launch"' not in client.get("/plan", params={"model": "llama-3.1-8b", "hardware": "h100-sxm",
                                                            "chips": "4"}).text


def test_plan_page_block_and_copy_button_in_browser(page, live_server):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(live_server + "/plan?model=llama-3.1-8b&hardware=h100-sxm&chips=4&emit=trtllm")
    settle(page)
    block = page.locator("#launch pre").first
    assert "trtllm-serve meta-llama/Llama-3.1-8B" in block.inner_text()
    page.click("#launch button.copy")
    page.wait_for_function("() => document.querySelector('#launch button.copy').textContent === 'copied'")
    assert "trtllm-serve" in page.evaluate("() => navigator.clipboard.readText()")
    assert page.input_value("select[name=emit]") == "trtllm"
