"""Core attention in a training step at its kernel's published share of the 16-bit peak, where η does not apply.

The training terms' η (core/train_time.py) is fitted on steps whose attention runs fused kernels of GEMM-class
efficiency — cuDNN fused attention under Transformer Engine (Megatron-Core, NeMo), DeepSeek's own — so the
engine's attention FLOPs go at η of the 16-bit peak with the GEMMs (``attention_kernel`` "fused"). PyTorch's
``scaled_dot_product_attention`` does not: it picks its backend by a fixed priority that puts its bundled
FlashAttention-2 first, on Hopper too (huggingface/transformers PR #48163: the cuDNN backend, opt-in, is
1.7-2.3x faster on H100 for training shapes; meta-pytorch/tritonbench issue #41, 2024-11: SDPA on H100 is
markedly slower unless cuDNN is asked for), and FlashAttention-2 reaches about 35% of the H100's BF16 peak
(Shah et al. 2024, FlashAttention-3, arXiv 2407.08608, abstract: "FlashAttention-2 achieving only 35%
utilization on the H100 GPU"). So for "fa2" (torchtitan and other SDPA trainers):
    t_attention = A_16 · (3 + recompute) / 0.35
A_16 the step's attention forward at the 16-bit peak (core/training.lower_step), 3 for forward and backward
(2x), +1 where the recipe recomputes it (selective, modules, full). The share is taken at the chip's own
16-bit peak; it is the H100's (wrong off Hopper: FlashAttention-2 reaches 50-73% of the A100's, Dao 2023,
arXiv 2307.08691) and it stands for forward and backward alike (FlashAttention-2's backward is the slower).
"""

from __future__ import annotations

import numpy as np

from tokenomy.refusal import choice

ATTENTION_KERNELS = ("fused", "fa2")
FA2_PEAK_SHARE = 0.35  # FlashAttention-2's share of the H100 BF16 peak (module docstring)


def check_attention_kernel(kernel: str) -> str:
    return choice("attention_kernel", kernel, ATTENTION_KERNELS, "an attention kernel")


def kernel_attention_s(kernel: str, attention_16_s):
    """(the attention time taken out of the η-timed GEMMs, its time at the kernel's own rate): (0, 0) for "fused";
    for "fa2" (A_16·(3 + recompute), that / 0.35) — ``attention_16_s`` is A_16·(3 + recompute) (module docstring)."""
    a = np.asarray(attention_16_s, dtype=float)
    if check_attention_kernel(kernel) == "fused":
        return 0.0 * a, 0.0 * a
    return a, a / FA2_PEAK_SHARE
