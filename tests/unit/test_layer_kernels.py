"""Kernels a layer launches (arch/kernels.py), counted by hand from the configs' layer kinds, and the per-kernel
floor κ charged on them by the engine."""

import numpy as np

from tokenomy.arch.kernels import model_kernels
from tokenomy.catalog import loader
from tokenomy.core.coeffs import coefficients


def test_kernel_counts_by_layer_kind():
    # Llama-3.1-8B: 32 GQA layers, 2 norms + attention 5 + dense MLP 3 = 10 each
    assert model_kernels(loader.model("llama-3.1-8b")) == 32 * 10
    # Qwen3-32B: 64 GQA layers with per-head q/k norms: 2 + 6 + 3 = 11
    assert model_kernels(loader.model("qwen3-32b")) == 64 * 11
    # DeepSeek-V3: 3 dense MLA layers (2 + 10 + 3 = 15) and 58 MoE ones with a shared expert (2 + 10 + 7 + 3 = 22)
    assert model_kernels(loader.model("deepseek-v3")) == 3 * 15 + 58 * 22
    assert coefficients(loader.model("deepseek-v3")).kernels == 3 * 15 + 58 * 22


def test_the_floor_is_kappa_per_kernel_of_the_stage():
    # a pp2 stage launches half the model's kernels: the floor is κ·f·K with f = ceil(L/pp)/L
    from tokenomy.core.deployment import Deployment
    from tokenomy.core.efficiency import ROOFLINE
    from tokenomy.core.layout import Layout

    m, hw = loader.model("llama-3.1-8b"), loader.hardware("hgx-h100-8")
    for pp in (1, 2):
        d = Deployment(m, hw, Layout(tp=1, pp=pp), None, "bf16", ROOFLINE)
        base = d.run(np.array([float(pp)]), 2048.0).overhead_s
        kappa = d.run(np.array([float(pp)]), 2048.0, eff=ROOFLINE.with_(kernel_overhead_s=1e-6)).overhead_s
        assert np.allclose(kappa - base, 1e-6 * 320 / pp, rtol=1e-12)
