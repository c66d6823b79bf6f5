"""Analytical activation memory: Korthikanti closed forms, and the benchmark's shape."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tokenomy.reversible.memory_model import (
    STRATEGIES,
    activation_bytes_per_layer,
    activation_memory,
    layer_activation_bytes,
    reversible_saving_vs_checkpoint_bytes,
)

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "reversible_results.py"
MIB = 2**20


def test_korthikanti_eq2_closed_form():
    # GPT-3 175B-like layer: s=2048, b=1, h=12288, a=96 (Korthikanti et al. 2022, Table 2)
    s, b, h, a = 2048, 1, 12288, 96
    assert layer_activation_bytes(s, b, h, a) == s * b * h * (34 + 5 * a * s / h)
    assert activation_bytes_per_layer("selective", s, b, h, a) == 34 * s * b * h
    assert activation_bytes_per_layer("full", s, b, h, a) == 2 * s * b * h
    assert activation_bytes_per_layer("reversible", s, b, h, a) == 0


def test_depth_dependence_by_strategy():
    kw = dict(seq_len=1024, batch_size=2, hidden_size=256, num_attention_heads=4)
    for strategy in STRATEGIES:
        m4, m32 = (activation_memory(strategy, L, **kw) for L in (4, 32))
        slope = (m32.total_bytes - m4.total_bytes) / 28
        assert slope == pytest.approx(m4.per_layer_bytes)
        assert m4.total_bytes == m4.stored_bytes + m4.working_bytes
    rev = [activation_memory("reversible", L, streams=2, **kw).total_bytes for L in (1, 8, 80)]
    assert rev[0] == rev[1] == rev[2]
    with pytest.raises(ValueError, match="allowed: none"):
        activation_memory("offload", 4, **kw)


def test_broadcasts_over_numpy_arrays():
    L = np.array([4, 8, 16, 32])
    m = activation_memory("full", L, 1024, 2, 256, 4, bytes_per_element=4, dropout=False,
                          streams=2)
    assert m.total_bytes.shape == (4,)
    assert np.all(np.diff(m.total_bytes) > 0)
    r = activation_memory("reversible", L, 1024, 2, 256, 4, streams=2)
    assert np.all(r.total_bytes == r.total_bytes[0])


def test_saving_formula_for_reference_and_llm_sizes():
    # reference benchmark: 2 streams x B=2 x T=1024 x d=256 x 4 bytes = 4 MiB per block
    assert reversible_saving_vs_checkpoint_bytes(1, 2, 1024, 256, 4) == 4 * MIB
    # a 70B-class LLM (80 layers, d=8192), bf16, 1 x 8192 tokens: 80 x 2 x 8192^2 x 2 B
    assert reversible_saving_vs_checkpoint_bytes(80, 1, 8192, 8192, 2) == 80 * 2 * 8192**2 * 2


def _load_results():
    if not RESULTS.exists():
        pytest.skip("benchmarks/reversible_results.py not generated yet")
    spec = importlib.util.spec_from_file_location("reversible_results", RESULTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_model_shape_matches_benchmark_measurement():
    res = _load_results()
    cfg = res.META["config"]
    s, b, h, a = cfg["seq"], cfg["batch"], cfg["d_stream"], cfg["heads"]
    model_ckpt = activation_bytes_per_layer("full", s, b, h, a, bytes_per_element=4,
                                            dropout=False, streams=2) / MIB
    model_rev = activation_bytes_per_layer("reversible", s, b, h, a, 4, False, 2) / MIB
    measured = res.SUMMARY
    assert measured["tokenomy"]["slope_mib_per_block"] < 0.1  # flat, as modelled (0)
    assert model_rev == 0
    assert measured["checkpoint"]["slope_mib_per_block"] == pytest.approx(model_ckpt, rel=0.1)
    assert measured["plain"]["slope_mib_per_block"] > 4 * model_ckpt  # linear and steep


# --- the training memory model (tokenomy.core.memory) against both of the above ---

def _bench_gpt(num_layers: int, D: int = 256, H: int = 4):
    """The benchmark's block as a ModelArch layer: MHA with bias, ungated 4D MLP, 2 norms."""
    from tokenomy.arch.model import Attention, Layer, Mlp, ModelArch

    layer = Layer(Attention("mha", H, H, D // H, D // H, bias=True),
                  Mlp("dense", intermediate_size=4 * D, gated=False, bias=True))
    return ModelArch("bench-gpt", "gpt2", D, 96, (layer,) * num_layers)


def _core_activation_bytes(num_layers, strategy, seq=1024, batch=2, act_bytes=4.0,
                           dropout=False, flash=True):
    core_memory = pytest.importorskip("tokenomy.core.memory")
    from tokenomy.core.training import TrainPlan

    plan = TrainPlan(seq_len=seq, micro_batch=batch, global_batch=batch, recompute=strategy, sp=False)  # 1 micro-batch
    m = core_memory.train_memory(_bench_gpt(num_layers), plan, 1e15,
                                 core_memory.TrainBytes(act_bytes=act_bytes, dropout=dropout, flash=flash))
    return float(m.act_stored_bytes + m.act_working_bytes)  # logits excluded


def test_core_training_model_agrees_with_closed_form():
    """Two derivations of Korthikanti sec. 4.1 (GPT layer, bf16, dropout, scores stored)."""
    s, b, h, a = 512, 2, 256, 4
    for strategy in ("none", "selective", "full"):
        core = (_core_activation_bytes(9, strategy, s, b, 2.0, True, False)
                - _core_activation_bytes(8, strategy, s, b, 2.0, True, False))
        assert core == pytest.approx(activation_bytes_per_layer(strategy, s, b, h, a))


def test_core_training_model_reversible_matches_benchmark_shape():
    res = _load_results()
    depths = (4, 8, 16, 32)
    rev = [_core_activation_bytes(L, "reversible") for L in depths]
    full = [_core_activation_bytes(L, "full") for L in depths]
    none = [_core_activation_bytes(L, "none") for L in depths]
    assert rev == [rev[0]] * len(depths)  # independent of depth, like the measurement
    measured = res.SUMMARY
    slope = lambda ys: (ys[-1] - ys[0]) / (depths[-1] - depths[0]) / MIB  # noqa: E731
    # a coupled block checkpoints its two input streams; the core's layer has one
    assert 2 * slope(full) == pytest.approx(measured["checkpoint"]["slope_mib_per_block"],
                                            rel=0.05)
    # plain: FlashAttention-style CPU kernel, no stored scores
    assert slope(none) == pytest.approx(measured["plain"]["slope_mib_per_block"], rel=0.1)
    assert measured["tokenomy"]["slope_mib_per_block"] < 0.1
