"""The serving-engine profiles the answers take (catalog/engines/<engine>.toml), with their overrides checked."""

from __future__ import annotations

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


def benchmark_protocol(name: str):
    """The catalog's benchmark protocol ``name`` (catalog/protocols/<name>.toml) as a serving.protocol.Protocol;
    a name outside PROTOCOLS is a ValueError naming ``protocol`` and the allowed names."""
    from tokenomy.serving.protocol import protocol_of

    if name not in PROTOCOLS:
        raise ValueError(f"protocol: {name!r}; allowed: {', '.join(PROTOCOLS)}")
    return protocol_of(loader.protocol_file(name))
