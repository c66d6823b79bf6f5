"""The casts of dynamic per-tensor FP8 scaling (torchao Float8Linear, "tensorwise"): memory passes outside η and φ.

Transformer Engine (Megatron-Core, NeMo) emits a GEMM's FP8 operands from the kernels before it — the norm, the
activation, the previous GEMM's epilogue — so its casts cost next to nothing beside the GEMM and what is left sits
in the fitted φ (``fp8_scaling`` "fused", the default). torchao's Float8Linear with dynamic tensorwise scaling
(torchtitan's Float8 rows) casts each GEMM operand in kernels of its own: an amax reduction, then a cast that
writes the FP8 copy in both layouts (row-major for one GEMM, column-major for the transposed one). torchao's own
roofline of those kernels (pytorch/ao torchao/testing/float8/roofline_utils.py, get_tensor_memory_traffic_ovhd_s,
"tensorwise") counts per element, bf16 in (2 B), float8 out (1 B):
    input, grad_output   amax read 2 (fused with the previous op under torch.compile: 0) + cast read 2 + write 2·1
    weight               amax read 2 + forward cast 2 + 1 + backward cast 2 + 1
so, with the amax fused (compiled, as every torchtitan row here), 4 B per activation element and 8 B per weight,
at 92% of HBM bandwidth (the same file: Triton pointwise kernels on Meta's 2.4 TB/s H100 reach ~2.2 TB/s):
    t_cast = (4·Σ_linears (K + N)·T_chip/tp + 8·W_stage/tp·m) / (0.92·BW_HBM)
Σ (K + N) per token of the stage's layers over distinct GEMM inputs (x to q/k/v and to gate/up once each —
AOTAutograd's CSE merges the identical casts of one input — the attention output, the MLP's inner activation) and
every GEMM's output gradient (q, k, v, o, gate, up, down); W_stage the stage's linear weights, cast once per
micro-batch (m per step) after FSDP's all-gather; T_chip = micro_batch·seq·m/cp. Not counted: the LM head (torchtitan
keeps it in BF16), routed experts (grouped GEMMs), the casts a fully recomputed forward repeats.
"""

from __future__ import annotations

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.refusal import choice

FP8_SCALINGS = ("fused", "tensorwise")
ACT_BYTES_PER_ELEM = 4.0  # amax fused with the previous op, bf16 read + row- and column-major float8 written
WEIGHT_BYTES_PER_ELEM = 8.0  # amax read, a bf16 read and a float8 write for the forward and for the backward cast
ACHIEVABLE_HBM = 0.92  # torchao roofline_utils: pointwise Triton kernels reach ~92% of HBM bandwidth


def check_fp8_scaling(scaling: str) -> str:
    return choice("fp8_scaling", scaling, FP8_SCALINGS, "an FP8 scaling")


def linear_elems(m: ModelArch) -> tuple[float, float]:
    """(Σ over layers of the distinct GEMM inputs and every GEMM output gradient per token, Σ linear weights):
    attention projections and the dense MLP (or an MoE's shared experts) of every layer (module docstring)."""
    per_token, weights = 0.0, 0.0
    for ly in m.layers:
        a, mlp, D = ly.attention, ly.mlp, m.hidden_size
        F = mlp.intermediate_size if mlp.kind == "dense" else mlp.num_shared_experts * mlp.shared_intermediate_size
        gates = 2 if mlp.gated else 1
        q, o = a.num_heads * a.head_dim, a.num_heads * a.v_head_dim
        inputs = D + o + (D + F if F else 0)  # x to q/k/v, attention output, x to gate/up, inner activation
        grads = q + a.kv_elements_per_token() + D + (gates * F + D if F else 0)  # d(q, k, v, o), d(gate, up, down)
        per_token += inputs + grads
        weights += a.params(D) + (mlp.dense_params(D) if F else 0)
    return per_token, weights


def fp8_cast_s(m: ModelArch, plan, gemm_dtype: str, hbm_bytes_per_s: float):
    """t_cast of one step on the busiest chip (module docstring); 0 unless ``plan.fp8_scaling`` is "tensorwise"
    and the GEMMs run in FP8. ``plan`` a core.training.TrainPlan."""
    if check_fp8_scaling(plan.fp8_scaling) == "fused" or gemm_dtype != "fp8":
        return 0.0 * np.asarray(plan.seq_len, dtype=float)
    per_token, weights = linear_elems(m)
    L, tp = len(m.layers), np.asarray(plan.tp, dtype=float)
    stage = np.ceil(L / np.asarray(plan.pp, dtype=float)) / L
    mb = np.asarray(plan.microbatches, dtype=float)
    tokens = np.asarray(plan.micro_batch, dtype=float) * np.asarray(plan.seq_len, dtype=float) * mb / np.asarray(
        plan.cp, dtype=float)
    nbytes = (ACT_BYTES_PER_ELEM * per_token * tokens + WEIGHT_BYTES_PER_ELEM * weights * mb) * stage / tp
    return nbytes / (ACHIEVABLE_HBM * hbm_bytes_per_s)
