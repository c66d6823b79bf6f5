"""train's keywords as the request objects its step takes: the keyword table with its defaults (the door's
public signature, answers/door.py), each keyword checked by name, the TrainPlan (core/training.py) and the bytes a
step stores per element (core/memory.TrainBytes)."""

from __future__ import annotations

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.resolve import dtype_of
from tokenomy.core.attention_kernel import ATTENTION_KERNELS
from tokenomy.core.fp8_casts import FP8_SCALINGS
from tokenomy.core.memory import SCHEDULES, STRATEGIES, TrainBytes
from tokenomy.core.moe_host import DISPATCHERS
from tokenomy.core.recompute_modules import check_modules
from tokenomy.core.training import ATTENTION_CONVENTIONS, MOE_KERNELS, TrainPlan
from tokenomy.units import dtype_bytes

# the keywords train takes beside model, hardware, published and search, with their defaults: the layout and its
# schedule (TrainPlan), the batch, the efficiency, the dtypes (TrainBytes, Lowering) and the kernels
TRAIN_KEYWORDS = {"dp": None, "chips": None, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "ep_overlap": 0.0, "zero": 1,
                  "fsdp": False, "no_sp": False, "schedule": "1f1b", "virtual_stages": 1, "recompute": "selective",
                  "micro_batch": 1, "seq_len": 4096, "global_batch": 1024, "tokens": None, "mfu": None,
                  "flops_fraction": None, "efficiency": "calibrated", "tp_overlap": 0.0, "attention": "causal",
                  "compute_dtype": "bf16", "weight_dtype": "bf16", "grad_dtype": "bf16", "optimizer_dtype": "fp32",
                  "activation_dtype": "bf16", "moe_kernels": "unfused", "moe_dispatcher": "hybridep",
                  "flash_attention": False, "dropout": False, "bf16_layers_at_end": 0, "attention_kernel": "fused",
                  "offload_layers": 0, "fp8_scaling": "fused", "recompute_modules": ""}
DTYPE_KEYWORDS = ("compute_dtype", "weight_dtype", "grad_dtype", "optimizer_dtype", "activation_dtype")


def checked(v: dict) -> dict:
    """train's keywords ``v`` with each refused by name where it is not allowed, the choices canonical."""
    for field in DTYPE_KEYWORDS:
        if v[field] is None:
            raise ValueError(f"{field}: required")
        dtype_of(field, v[field])
    inputs.choice("schedule", v["schedule"], SCHEDULES)
    inputs.choice("recompute", v["recompute"], STRATEGIES)
    v = {**v, "recompute_modules": check_modules(v["recompute_modules"], v["recompute"])}
    for field, allowed in (("moe_kernels", MOE_KERNELS), ("moe_dispatcher", tuple(DISPATCHERS)),
                           ("attention", ATTENTION_CONVENTIONS)):
        inputs.choice(field, v[field], allowed)
    v = {**v, "attention_kernel": inputs.choice("attention_kernel", v["attention_kernel"], ATTENTION_KERNELS),
         "fp8_scaling": inputs.choice("fp8_scaling", v["fp8_scaling"], FP8_SCALINGS)}
    for field in ("mfu", "flops_fraction", "tokens", "tp_overlap", "tp", "pp", "cp", "ep", "virtual_stages",
                  "micro_batch", "seq_len", "chips", "dp"):
        inputs.optional(field, v[field])
    if v["zero"] not in (0, 1, 2, 3):
        raise ValueError(f"zero: {v['zero']}; allowed: 0, 1, 2, 3")
    return v


def train_plan(v: dict, hw) -> TrainPlan:
    """The TrainPlan of train's keywords ``v`` (checked) on ``hw``: dp from the chips (all of a multi-chip system's,
    else one replica) where it is not given, checked against them where both are."""
    tp, pp, cp, dp, chips = v["tp"], v["pp"], v["cp"], v["dp"], v["chips"]
    inner = tp * pp * cp
    if dp is None:
        total = chips or (hw.num_chips if hw.num_chips > 1 else inner)
        if total % inner:
            raise ValueError(f"chips: {total} is not a multiple of tp*pp*cp = {inner}")
        dp = total // inner
    elif chips is not None and chips != dp * inner:
        raise ValueError(f"chips: {chips} != dp*tp*pp*cp = {dp * inner}")
    same = ("tp", "pp", "cp", "ep", "schedule", "virtual_stages", "recompute", "ep_overlap", "tp_overlap",
            "micro_batch", "seq_len", "moe_kernels", "moe_dispatcher", "bf16_layers_at_end", "attention_kernel",
            "fp8_scaling", "offload_layers", "recompute_modules")
    return TrainPlan(dp=dp, zero=3 if v["fsdp"] else v["zero"], sp=not v["no_sp"],
                     global_batch=np.atleast_1d(np.asarray(v["global_batch"], dtype=int)), **{k: v[k] for k in same})


def train_bytes(v: dict) -> TrainBytes:
    """What a training step stores per element, from train's dtypes: Adam's two moments at the optimizer dtype
    and an fp32 master copy per weight."""
    opt_b = dtype_bytes(v["optimizer_dtype"]) * 2 + 4.0
    return TrainBytes(dtype_bytes(v["weight_dtype"]), dtype_bytes(v["grad_dtype"]), opt_b,
                      dtype_bytes(v["activation_dtype"]), v["dropout"], v["flash_attention"])
