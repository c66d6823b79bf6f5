"""A checkpoint's weight dtypes from its config.json: ``torch_dtype`` / ``dtype`` and ``quantization_config`` (fp8,
mxfp4, NVIDIA ModelOpt, compressed-tensors) -> the ``Quantization`` of its dense, expert and embedding weights."""

from __future__ import annotations

import re
from typing import Any

from tokenomy.arch.hf_config import ConfigError, _Cfg
from tokenomy.arch.model import Quantization


# Representative module names per weight category, matched against a checkpoint's quantized / ignored module lists.
_CATEGORY_MODULES = {"dense": ("self_attn.o_proj", "linear_attn.out_proj", "mixer.out_proj"),
                     "expert": ("mlp.experts", "mlp.experts.0.down_proj", "block_sparse_moe.experts.0.w2", "mixer.experts.0.down_proj"),
                     "embed": ("lm_head",)}
# NVIDIA ModelOpt quant_algo names -> dtype (NVFP4: e2m1 values with one e4m3 scale per 16, units.DTYPE_BYTES).
_MODELOPT = {"FP8": "fp8", "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "W4A8_NVFP4_FP8": "nvfp4", "MXFP4": "mxfp4",
             "W4A16_AWQ": "int4", "W4A8_AWQ": "int4", "INT8_SQ": "int8", "W8A8_SQ_PER_CHANNEL": "int8"}


def _modelopt(c: _Cfg, q: dict, base: str) -> Quantization:
    """ModelOpt (``quant_method: modelopt``): one ``quant_algo`` for all linears (minus ``exclude_modules``), or
    MIXED_PRECISION with a per-module ``quantized_layers`` map; modules not listed stay in the checkpoint dtype."""
    def dtype(algo: Any, field: str) -> str:
        if algo not in _MODELOPT:
            raise ConfigError(f"config {c.name}: quantization_config.{field} {algo!r} not supported; "
                              f"allowed: {', '.join(_MODELOPT)}")
        return _MODELOPT[algo]

    algo = q.get("quant_algo")
    per = {}
    if algo == "MIXED_PRECISION":
        layers = q.get("quantized_layers")
        if not isinstance(layers, dict):
            raise ConfigError(f"config {c.name}: quantization_config.quantized_layers must map modules to quant_algo")
        for cat, names in _CATEGORY_MODULES.items():
            hits = [v.get("quant_algo") for k, v in layers.items() if isinstance(v, dict) and k.endswith(names)]
            per[cat] = dtype(hits[0], "quantized_layers.*.quant_algo") if hits else base
    else:
        dt = dtype(algo, "quant_algo")
        excluded = [str(x).rstrip("*") for x in q.get("exclude_modules") or []]
        per = {cat: base if any(e and (e in n or n.startswith(e)) for e in excluded for n in names) or
               (cat == "embed" and "lm_head" not in str(q.get("quantized_layers", "lm_head"))) else dt
               for cat, names in _CATEGORY_MODULES.items()}
    note = f"modelopt {algo}: " + ", ".join(f"{k} {v}" for k, v in per.items())
    if per["embed"] != base:  # one dtype for both: the head's, which every token reads
        note += f" (lm_head's; embed_tokens stays {base})"
    return Quantization(per["dense"], per["expert"], per["embed"], note=note)


def _compressed_tensors(c: _Cfg, q: dict, base: str) -> Quantization:
    """compressed-tensors (``quant_method: compressed-tensors``): a config group's weight format (mxfp4: 4-bit float,
    group 32, uint8 scale; 8-bit float: fp8; 4-bit int: int4) applies to every Linear not matched by ``ignore``
    (entries ``re:<regex>`` or module names)."""
    groups = q.get("config_groups") or {}
    if len(groups) != 1:
        raise ConfigError(f"config {c.name}: quantization_config.config_groups must hold one group, got {len(groups)}")
    w = next(iter(groups.values())).get("weights") or {}
    fmt = (w.get("type"), w.get("num_bits"), w.get("group_size"))
    formats = {("float", 4, 32): "mxfp4", ("float", 8, None): "fp8", ("int", 4, 128): "int4", ("int", 8, None): "int8"}
    dt = formats.get(fmt) or formats.get(fmt[:2] + (None,))
    if dt is None:
        raise ConfigError(f"config {c.name}: quantization_config.config_groups weights {fmt} (type, num_bits, "
                          f"group_size) not supported; allowed: {', '.join(map(str, formats))}")

    def ignored(name: str) -> bool:
        return any(re.fullmatch(i[3:], name) if i.startswith("re:") else name.endswith(i) for i in q.get("ignore") or [])
    per = {cat: base if any(ignored(f"model.layers.1.{n}") for n in names) else dt
           for cat, names in _CATEGORY_MODULES.items()}
    per["embed"] = base if ignored("lm_head") else dt
    return Quantization(per["dense"], per["expert"], per["embed"],
                        note=f"compressed-tensors {dt}: " + ", ".join(f"{k} {v}" for k, v in per.items()))


CHECKPOINT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}  # torch_dtype names a config uses


def checkpoint_dtype(c: _Cfg, key: str = "torch_dtype") -> str:
    """The checkpoint's dtype (``torch_dtype``, ``dtype`` in transformers 5; bfloat16 where absent): a name outside
    CHECKPOINT_DTYPES is refused naming the field, never read as bf16."""
    v = c.opt(key, "bfloat16")
    if v not in CHECKPOINT_DTYPES:
        raise ConfigError(f"config {c.name}: field '{key}' {v!r} not supported; allowed: "
                          f"{', '.join(CHECKPOINT_DTYPES)}")
    return CHECKPOINT_DTYPES[v]


def _quant(c: _Cfg) -> Quantization:
    """Per-category weight dtype from ``quantization_config`` / ``torch_dtype`` (``dtype`` in transformers 5)."""
    key = "torch_dtype" if c.opt("torch_dtype", None) is not None else "dtype"
    base = checkpoint_dtype(c, key)
    q = c.opt("quantization_config", None)
    if not q:
        return Quantization(base, base, base)
    method = q.get("quant_method", "")
    if method == "fp8":  # DeepSeek-V3/Kimi-K2: 128x128 block-scaled e4m3 linears, embeddings/head kept in bf16
        return Quantization("fp8", "fp8", base, note="fp8 e4m3 linears (block scales ignored: 1/16384 overhead)")
    if method == "mxfp4":  # gpt-oss: MoE experts in MXFP4, attention/router/embeddings in bf16
        return Quantization(base, "mxfp4", base, note="mxfp4 experts; " + ", ".join(q.get("modules_to_not_convert", [])))
    if method == "modelopt":  # NVIDIA ModelOpt checkpoints (FP8, NVFP4, mixed)
        return _modelopt(c, q, base)
    if method == "compressed-tensors":  # llm-compressor / vLLM checkpoints (Kimi-K3 mxfp4-pack-quantized)
        return _compressed_tensors(c, q, base)
    raise ConfigError(f"config {c.name}: quantization_config.quant_method {method!r} not supported; "
                      f"allowed: fp8, mxfp4, modelopt, compressed-tensors")
