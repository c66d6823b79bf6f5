"""The serving-engine profiles the answers take (catalog/engines/<engine>.toml), with their overrides checked."""

from __future__ import annotations

from dataclasses import replace

from tokenomy.answers import inputs
from tokenomy.answers.resolve import DEFAULT_ENGINE
from tokenomy.catalog import loader
from tokenomy.serving.scheduler import EngineProfile, profile_of

# every engine with a profile in the catalog (adding an engine = adding its file), the default first
ENGINES = (DEFAULT_ENGINE, *(e for e in loader.engine_names() if e != DEFAULT_ENGINE))
# the benchmark protocols (catalog/protocols/<name>.toml; the names validation.schema.PROTOCOLS lets a case state),
# the steady state first: the default every door shows
PROTOCOLS = ("steady", *(n for n in loader.protocol_names() if n != "steady"))


def engine_profile(name: str, tp: int = 1, max_num_tokens=None, max_batch=None) -> EngineProfile:
    """The catalog's profile for ``name`` (the HBM share for ``tp`` where the engine sets it by TP degree)."""
    if name not in ENGINES:
        raise ValueError(f"engine: {name!r}; allowed: {', '.join(ENGINES)}")
    return profile_of(loader.engine_file(name), tp, inputs.optional("max_num_tokens", max_num_tokens),
                      inputs.optional("max_batch", max_batch))


def delayed_batching(prof: EngineProfile, iters=None, tokens_ratio=None) -> EngineProfile:
    """``prof`` with TensorRT-LLM's delayed batching set (serving.batch_wait.held_steps): ``iters`` =
    batch_wait_timeout_iters, ``tokens_ratio`` = batch_wait_max_tokens_ratio (TorchLlmArgs; None: the profile's,
    0 and 0.0 in the catalog). Refused, naming the field: on an engine without it (vLLM and SGLang hold no prompt),
    and one of the two above 0 while the other is 0 (PyExecutor._waiting_requests passes at once where either is 0:
    the setting would do nothing)."""
    if iters is None and tokens_ratio is None:
        return prof
    field = "batch_wait_iters" if iters is not None else "batch_wait_tokens_ratio"
    if prof.name != "trtllm":
        raise ValueError(f"{field}: TensorRT-LLM's delayed batching (engine trtllm); engine {prof.name} has none")
    T = int(inputs.optional("batch_wait_iters", iters)) if iters is not None else prof.batch_wait_iters
    ratio = (float(inputs.optional("batch_wait_tokens_ratio", tokens_ratio)) if tokens_ratio is not None
             else prof.batch_wait_tokens_ratio)
    if (T > 0) != (ratio > 0):
        zero = "batch_wait_tokens_ratio" if T > 0 else "batch_wait_iters"
        raise ValueError(f"{field}: delayed batching waits only where batch_wait_iters and batch_wait_tokens_ratio "
                         f"are both above 0; {zero} is 0 (the profile's where not given), and 0 turns it off; set "
                         "both above 0, or both 0")
    return replace(prof, batch_wait_iters=T, batch_wait_tokens_ratio=ratio)


def benchmark_protocol(name: str):
    """The catalog's benchmark protocol ``name`` (catalog/protocols/<name>.toml) as a serving.protocol.Protocol;
    a name outside PROTOCOLS is a ValueError naming ``protocol`` and the allowed names."""
    from tokenomy.serving.protocol import protocol_of

    if name not in PROTOCOLS:
        raise ValueError(f"protocol: {name!r}; allowed: {', '.join(PROTOCOLS)}")
    return protocol_of(loader.protocol_file(name))
