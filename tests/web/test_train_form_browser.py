"""The Train page's recipe options in Debian's chromium: the attention kernel and the FP8 casts are selects offering
the engine's values, and choosing torchtitan's (FlashAttention-2, torchao tensorwise casts) slows the step shown."""

from __future__ import annotations

import pytest

from tokenomy.core.attention_kernel import ATTENTION_KERNELS
from tokenomy.core.fp8_casts import FP8_SCALINGS

from .browsing import change, mark, settle

pytestmark = pytest.mark.browser

STEP = "() => document.querySelector('#train-rows tbody tr td:nth-child(3)').textContent.trim()"
OPTIONS = "(n) => [...document.querySelectorAll(`select[name=${n}] option`)].map(o => o.value).filter(Boolean)"


def seconds(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"s": 1.0, "ms": 1e-3}[unit]


def test_train_form_sets_the_kernels_of_a_recipe(page, live_server):
    page.goto(live_server + "/train?model=llama-3.1-8b&hardware=h100-sxm&chips=8&tp=1&pp=1&seq_len=8192"
                            "&global_batch=16&micro_batch=1&zero=3&compute_dtype=fp8&flash_attention=true&tokens=")
    assert page.evaluate(OPTIONS, "attention_kernel") == list(ATTENTION_KERNELS)
    assert page.evaluate(OPTIONS, "fp8_scaling") == list(FP8_SCALINGS)
    fused = seconds(page.evaluate(STEP))
    change(page, "select[name=attention_kernel]", "fa2")
    fa2 = seconds(page.evaluate(STEP))
    change(page, "select[name=fp8_scaling]", "tensorwise")
    assert "attention_kernel=fa2" in page.url and "fp8_scaling=tensorwise" in page.url
    both = seconds(page.evaluate(STEP))
    assert fused < fa2 < both
    both_url = page.url
    change(page, "select[name=attention_kernel]", "fused")  # a third change: the casts alone
    casts = seconds(page.evaluate(STEP))
    assert fused < casts < both

    # Back restores the previous question: its inputs and its step on screen, not the last one's
    mark(page)
    page.go_back()
    page.wait_for_function("(u) => location.href === u", arg=both_url)
    settle(page)
    assert page.input_value("select[name=attention_kernel]") == "fa2"
    assert page.input_value("select[name=fp8_scaling]") == "tensorwise"
    assert seconds(page.evaluate(STEP)) == both
