"""train --search: the fastest training layouts that fit, ranked by objectives.FASTEST_TRAIN_STEP
(parallel/train_search.py evaluates each candidate with core.training.train_step)."""

from __future__ import annotations

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.resolve import dtype_of, hardware_of, model_of
from tokenomy.answers.result import Result
from tokenomy.answers.training import train_efficiency_of, train_rows
from tokenomy.core.attention_kernel import ATTENTION_KERNELS
from tokenomy.core.fp8_casts import FP8_SCALINGS
from tokenomy.core.memory import TrainBytes
from tokenomy.core.training import MOE_KERNELS, Lowering, train_run
from tokenomy.units import dtype_bytes

SEARCH_COLUMNS = ("tp", "cp", "pp", "dp", "ep", "ep_overlap", "schedule", "recompute", "step_s", "mfu", "bubble_fraction",
                  "comm_exposed_s", "memory_per_chip_bytes", "chip_hours")


SEARCH_TOP = 10  # layouts train --search shows, fastest first


# what train --search reads of train's keywords
SEARCH_KEYWORDS = ("chips", "seq_len", "global_batch", "tokens", "efficiency", "compute_dtype", "activation_dtype",
                   "optimizer_dtype", "moe_kernels", "attention_kernel", "fp8_scaling")


def train_search(model, hardware, given: dict) -> Result:
    """The fastest layouts that fit for a model, chip count and global batch (parallel/train_search.py); ``given``:
    train's SEARCH_KEYWORDS."""
    from tokenomy.answers import objectives
    from tokenomy.parallel.train_search import TrainSearch, fitting

    chips, seq_len, global_batch, tokens, efficiency, compute_dtype, activation_dtype, optimizer_dtype, moe_kernels = (
        given[k] for k in SEARCH_KEYWORDS[:9])

    if not model:
        raise ValueError("model: required")
    m, hw = model_of(model), hardware_of(hardware)
    total = chips or (hw.num_chips if hw.num_chips > 1 else None)
    if not total:
        raise ValueError("chips: required with search")
    gb = np.atleast_1d(np.asarray(global_batch, dtype=int))
    if gb.size != 1:
        raise ValueError("global_batch: one value with search")
    inputs.choice("moe_kernels", moe_kernels, MOE_KERNELS)
    kernels = (inputs.choice("attention_kernel", given["attention_kernel"], ATTENTION_KERNELS),
               inputs.choice("fp8_scaling", given["fp8_scaling"], FP8_SCALINGS))
    for field, v in (("compute_dtype", compute_dtype), ("activation_dtype", activation_dtype),
                     ("optimizer_dtype", optimizer_dtype)):
        dtype_of(field, v)
    lowering = Lowering(compute_dtype=compute_dtype, nbytes=TrainBytes(
        act_bytes=dtype_bytes(activation_dtype), optimizer_bytes=dtype_bytes(optimizer_dtype) * 2 + 4.0, flash=True))
    q = TrainSearch(int(total), int(gb[0]), int(seq_len), moe_kernels, lowering, *kernels)
    fits = fitting(m, hw, q, train_efficiency_of(hw, efficiency))
    order = objectives.rank(objectives.FASTEST_TRAIN_STEP, {"fits": [True] * len(fits),
                                                           "step_s": [float(st.step_s) for _, st in fits]})
    found = [fits[i] for i in order[:SEARCH_TOP]]
    if not found:
        raise ValueError(f"chips: no layout of {m.name} on {total} x {hw.chip.name} fits global batch {int(gb[0])}")
    rows = []
    for plan, st in found:
        run = train_run(st, tokens, hw.usd_per_chip_hour) if tokens else None
        row = train_rows(st, run, plan)[0]
        row["schedule"] = plan.schedule + (f" (v{int(plan.virtual_stages)})" if plan.schedule == "interleaved" else "")
        rows.append(row)
    cols = tuple(c for c in SEARCH_COLUMNS if run is not None or c != "chip_hours")
    return Result("train", f"train --search: the fastest layouts of {m.name} on {total} x {hw.chip.name} that fit "
                  f"(global batch {int(gb[0])} x {seq_len}; flash attention, ZeRO-1, micro-batches of one sequence); "
                  f"{objectives.FASTEST_TRAIN_STEP.rule(chips=total)}", tuple(rows), cols, rows_key="")
