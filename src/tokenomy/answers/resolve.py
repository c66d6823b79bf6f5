"""Names -> the engine's inputs: model, hardware, efficiency set, layout, deployment. Shared by every answer.

Every answer takes a model and hardware as catalog names (or paths) or as built objects, an efficiency set by name
("calibrated", the default: the chip's fitted terms, catalog/efficiency/<chip>.toml, else the pooled fit;
"roofline": the ideal values) and layout degrees. Bad values raise ValueError with one line naming the field.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from tokenomy.answers import inputs
from tokenomy.arch.model import ModelArch
from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import EFFICIENCY_SETS, ROOFLINE, Efficiency
from tokenomy.core.layout import Layout
from tokenomy.specs import Hardware
from tokenomy.units import CHECKPOINT, DTYPE_BYTES


def model_of(model: "str | ModelArch | None") -> ModelArch:
    if isinstance(model, ModelArch):
        return model
    if not model:
        raise ValueError("model: required; a catalog name (tokenomy models), a config.json path or a directory")
    return _named("model", loader.model, model)


def hardware_of(hardware: "str | Hardware | None") -> Hardware:
    if isinstance(hardware, Hardware):
        return hardware
    if not hardware:
        raise ValueError("hardware: required; a chip or system name (tokenomy hardware)")
    return _named("hardware", loader.hardware, hardware)


def _named(field: str, load, name) -> object:
    """``load(name)``, a refusal (unknown name, bad file) worded as every door words it: 'model: unknown model ...'."""
    try:
        return load(str(name))
    except ValueError as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(msg if msg.startswith(f"{field}:") else f"{field}: {msg}") from None


def dtype_of(field: str, v: str | None) -> str | None:
    if v is not None and v not in DTYPE_BYTES:
        raise ValueError(f"{field}: {v!r} is not a dtype; allowed: {', '.join(DTYPE_BYTES)}")
    return v


DEFAULT_ENGINE = "vllm"  # the serving engine whose host side a question without one is answered with


def weight_dtype_of(v: str | None) -> str | None:
    """A deployment's weight dtype: None for the checkpoint's own quantization, asked for by leaving it out or by
    name ("checkpoint", as sweeps and validation cases spell it), else a dtype."""
    if v == CHECKPOINT:
        return None
    if v is not None and v not in DTYPE_BYTES:
        raise ValueError(f"weight_dtype: {v!r} is not a dtype; allowed: {CHECKPOINT} (the checkpoint's own), "
                         f"{', '.join(DTYPE_BYTES)}")
    return v


def _as_engine_runs(eff: Efficiency, serving_engine: str) -> Efficiency:
    """``eff`` as the serving engine at its file's version runs it (core/engine_terms.EngineTerms.on, the update
    serving's EngineProfile.on makes)."""
    return loader.engine_terms(serving_engine).on(eff)


@lru_cache(maxsize=64)
def _calibrated(chip: str, serving_engine: str) -> Efficiency:
    from tokenomy.validation.load import efficiency_set

    return _as_engine_runs(efficiency_set(chip), serving_engine)


def efficiency_of(hw: Hardware, name: "str | Efficiency" = "calibrated",
                  serving_engine: str = DEFAULT_ENGINE) -> Efficiency:
    """The named efficiency set for ``hw``'s chip (an Efficiency passes through): "calibrated" is the chip's fitted
    terms as ``serving_engine`` runs them (its host and EP overlap, serving.scheduler.EngineProfile.on); a path to a
    .toml is a user's terms file (`tokenomy calibrate --from ... --out terms.toml`, validation/user_terms.py)."""
    if isinstance(name, Efficiency):
        return name
    if name == "roofline":
        return ROOFLINE
    if name == "calibrated":
        return _calibrated(hw.chip.name, serving_engine)
    if isinstance(name, str) and name.endswith(".toml"):
        from tokenomy.validation.user_terms import efficiency_set

        return _as_engine_runs(efficiency_set(name, hw.chip.name), serving_engine)
    raise ValueError(f"efficiency: {name!r}; allowed: {', '.join(EFFICIENCY_SETS)}, or a terms .toml written by "
                     "tokenomy calibrate --from")


def beyond_window(m, tokens):
    """Where a sequence of ``tokens`` (a number or an array) is longer than the model's context window (config.json
    max_position_embeddings, where given): the one rule; a sweep marks those points, the other doors refuse them."""
    return np.asarray(tokens, float) > (m.max_position_embeddings or np.inf)


def within_window(m, tokens: float, field: str, what: str = "") -> None:
    """A sequence of ``tokens`` inside the model's context window (``beyond_window``), or a ValueError naming
    ``field``: decode and prefill (their context), serve and plan (ISL + OSL)."""
    most = m.max_position_embeddings
    if np.any(beyond_window(m, tokens)):
        raise ValueError(f"{field}: {what}{tokens:,.0f} tokens exceeds {m.name}'s context of {most:,} tokens "
                         "(max_position_embeddings in its config.json)")


def layout_of(tp=None, ep=None, pp=None, dp=None, redundant_experts=None, attn_dp=None,
              kv_batch=None) -> Layout | None:
    """An explicit layout from degrees (those left out are 1), or None when no degree is given. ``attn_dp``
    False keeps attention tensor-parallel beside EP; ``kv_batch`` shards KV by sequence beyond the KV heads."""
    degrees = {k: inputs.optional(k, v) for k, v in (("tp", tp), ("ep", ep), ("pp", pp), ("dp", dp))}
    r = inputs.optional("redundant_experts", redundant_experts)
    if all(v is None for v in degrees.values()) and not r and attn_dp is None and not kv_batch:
        return None
    return Layout(*(degrees[k] or 1 for k in ("tp", "ep", "pp", "dp")), attn_dp=attn_dp, kv_batch=bool(kv_batch),
                  redundant_experts=int(r or 0))


def deployment(model, hardware, *, layout: Layout, weight_dtype: str | None = None, kv_dtype: str = "bf16",
               efficiency: "str | Efficiency" = "calibrated", usd_per_chip_hour: float | None = None,
               serving_engine: str = DEFAULT_ENGINE) -> Deployment:
    """The Deployment of names or specs; "calibrated" efficiency as ``serving_engine`` (vllm, sglang, trtllm: its
    profile's host and EP overlap) runs it."""
    m, hw = model_of(model), hardware_of(hardware)
    return Deployment(m, hw, layout, weight_dtype_of(weight_dtype), dtype_of("kv_dtype", kv_dtype),
                      efficiency_of(hw, efficiency, serving_engine), usd_per_chip_hour=usd_per_chip_hour)
