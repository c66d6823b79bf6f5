"""The notebook API: import tokenomy as tk."""

import pytest

import tokenomy as tk


def test_api_decode_and_prefill_agree_with_run_pass():
    m, hw = tk.model("llama-3.1-8b"), tk.hardware("h100-sxm")
    d = tk.decode(m, hw, batch=[1, 8], context=1024).rows()
    assert [r["len_pass"] for r in d] == [1, 1]
    p = tk.prefill(m, hw, batch=1, context=1024).rows()[0]
    assert p["len_pass"] == 1024 and p["bound"] == "compute"
    with pytest.raises(ValueError, match="len_pass must be <= context"):
        tk.prefill(m, hw, batch=1, context=10, len_pass=20)
