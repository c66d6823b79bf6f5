"""The workload page's KV dtype in a real browser: "auto" shows the engine's choice for the weights on screen
(TensorRT-LLM with fp8 weights: an fp8 cache), a named dtype wins, and Back restores both the form and the answer."""

from __future__ import annotations

from .browsing import change, settle


def _on_screen(page) -> str:
    return page.inner_text("#dtypes")


def test_kv_dtype_auto_named_and_back(page, live_server):
    page.goto(live_server + "/workload?model=llama-3.1-70b&hardware=h100-sxm&chips=2&tp=2&concurrency=8&engine=vllm"
              "&weight_dtype=fp8")
    settle(page)
    assert page.input_value("select[name=kv_dtype]") == "auto"
    assert _on_screen(page) == "weights fp8, KV bf16"  # vLLM's auto: the model's bf16
    urls = []
    for sel, value, want in (("engine", "trtllm", "KV fp8"),  # TensorRT-LLM follows the fp8 checkpoint
                             ("kv_dtype", "bf16", "KV bf16"), ("kv_dtype", "auto", "KV fp8")):
        change(page, f"select[name={sel}]", value)
        assert _on_screen(page) == f"weights fp8, {want}"
        urls.append(page.url)
    for url, sel, value, want in ((urls[1], "kv_dtype", "bf16", "KV bf16"), (urls[0], "engine", "trtllm", "KV fp8")):
        page.go_back()
        page.wait_for_function("(u) => location.href === u", arg=url)
        settle(page)
        page.wait_for_function("(w) => document.querySelector('#dtypes').innerText.endsWith(w)", arg=want)
        assert page.input_value(f"select[name={sel}]") == value and _on_screen(page) == f"weights fp8, {want}"
    href = page.get_attribute("#api-link", "href")
    r = page.request.get(live_server + href)
    assert r.status == 200 and r.json()[0]["engine"] == "trtllm"
