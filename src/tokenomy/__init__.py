"""tokenomy: the blackboard math of LLM training and serving, checkable against reality.

    import tokenomy as tk
    m, hw = tk.model("deepseek-v3"), tk.hardware("gb200-nvl72")
    r = tk.decode(m, hw, batch=[1, 64, 2048], context=8192)
    r.rows()
"""

from tokenomy.arch.params import count_params, kv_bytes_at_context, kv_bytes_per_token, weight_bytes
from tokenomy.catalog.loader import CatalogError, hardware, model
from tokenomy.core.inference import PassResult, run_pass
from tokenomy.core.roofline import Efficiency


def decode(m, hw, *, batch, context, chips=None, **kw) -> PassResult:
    """One decode step (one new token per sequence); see core.inference.run_pass for the keywords."""
    return run_pass(m, hw, batch=batch, context=context, len_pass=1, chips=chips, **kw)


def prefill(m, hw, *, batch, context, len_pass=None, chips=None, **kw) -> PassResult:
    """A prefill pass of ``len_pass`` new tokens (default: the whole context)."""
    return run_pass(m, hw, batch=batch, context=context, len_pass=context if len_pass is None else len_pass,
                    chips=chips, **kw)


__all__ = ["model", "hardware", "decode", "prefill", "run_pass", "Efficiency", "count_params",
           "kv_bytes_per_token", "kv_bytes_at_context", "weight_bytes", "CatalogError", "PassResult"]
