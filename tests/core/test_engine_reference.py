"""The vectorised engine against itself one configuration at a time: Deployment.run over a broadcast grid (batch x
context x prefill load or pass length) gives, point for point, the numbers of Deployment.run on that point's
scalars — bit for bit, the sign of zero and the place of every NaN included. The grid path skips terms that are
exactly 0 or 1 over the whole grid (no attention-DP, no routed experts, no prefill tokens, pp = 1: engine.batched,
engine.times) and the scalar path skips them point by point, so any shortcut that changed a value shows here.
Deployments cover dense and MoE, attention-DP with EP, batch-sharded KV and redundant experts, pipelines with
default and extra micro-batches, MLA, sliding windows, a TPU torus and the ideal split, calibrated and roofline."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.core import engine
from tokenomy.core.layout import Layout

CASES = [("llama-3.1-70b", "hgx-h100-8", Layout(8)), ("llama-3.1-8b", "hgx-h100-8", Layout(1)),
         ("llama-3.1-70b", "hgx-h100-8", Layout(2, pp=2, dp=2)),
         ("llama-3.1-405b", "gb200-nvl72", Layout(8, pp=4, dp=2, microbatches=8)),
         ("kimi-k2-instruct", "gb200-nvl72", Layout(4, ep=16)),
         ("deepseek-v3", "gb200-nvl72", Layout(2, ep=32, kv_batch=True, redundant_experts=32)),
         ("mixtral-8x7b", "hgx-h100-8", Layout(2, ep=4, attn_dp=False)), ("gpt-oss-120b", "hgx-b200-8", Layout(4)),
         ("gemma-3-27b-it", "tpu-v6e-256", Layout(4, dp=2)), ("llama-3.1-8b", "hgx-h100-8", Layout.even_split(8))]
FIELDS = ("chips", "batch", "context", "len_pass", "micro_batch", "flops", "attention_flops", "compute_s",
          "memory_s", "weights_read_s", "kv_s", "act_s", "tp_comm_s", "ep_comm_s", "comms_s", "overhead_s", "stage_s",
          "hop_s", "hops", "step_s", "tokens_per_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "mfu",
          "weight_bytes_per_chip", "kv_bytes_per_chip", "act_bytes_per_chip", "memory_per_chip_bytes", "hbm_bytes",
          "expert_rows", "experts_read", "rack_hop_ratio", "bound", "reason")
BATCH = np.array([1.0, 2.0, 3.0, 16.0, 100.0, 1000.0, 4096.0, 2.5])  # 2.5: not a whole number of sequences
CONTEXT = np.array([1.0, 100.0, 4096.0, 8193.0, 131072.0])
PREFILL = np.array([0.0, 100.0, 2048.0])  # interleaved prefill tokens at context 1500 (decode steps)
LEN_PASS = np.array([1.0, 128.0, 4096.0])  # new tokens per sequence (prefill passes)


def same(a, b) -> bool:
    """Equal bit for bit as numbers: NaN where NaN, and the sign of zero."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(np.all(((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))))


def _check(grid: engine.PassTerms, one, index):
    for f in FIELDS:
        g = np.broadcast_to(np.asarray(getattr(grid, f)), grid.shape)[index]
        assert same(g, getattr(one, f)), (f, index, g, getattr(one, f))


@pytest.mark.parametrize("model,hw,lay", CASES, ids=[f"{m}-{lay.label()}" for m, hw, lay in CASES])
@pytest.mark.parametrize("efficiency", ["calibrated", "roofline"])
def test_grid_equals_one_configuration_at_a_time(model, hw, lay, efficiency):
    dep = deployment(model, hw, layout=lay, efficiency=efficiency)
    with np.errstate(all="ignore"):
        mixed = dep.run(BATCH[None, :, None], CONTEXT[None, None, :], prefill_tokens=PREFILL[:, None, None],
                        prefill_context=1500.0)
        passes = dep.run(BATCH[None, :, None], CONTEXT[None, None, :], LEN_PASS[:, None, None])
        for i, j, k in np.ndindex(len(PREFILL), len(BATCH), len(CONTEXT)):
            _check(mixed, dep.run(BATCH[j], CONTEXT[k], prefill_tokens=PREFILL[i], prefill_context=1500.0), (i, j, k))
            _check(passes, dep.run(BATCH[j], CONTEXT[k], LEN_PASS[i]), (i, j, k))


def test_a_lowering_batched_twice_is_work_each_time():
    """engine.work = engine.batched(engine.lower(...)): one lowering serves several batches and prefill loads."""
    dep = deployment("kimi-k2-instruct", "gb200-nvl72", layout=Layout(4, ep=16))
    lo = dep.lower(CONTEXT, prefill_context=1500.0)
    with np.errstate(all="ignore"):
        for B, P in ((BATCH[:, None], 0.0), (BATCH[:, None], 512.0), (7.0, PREFILL[:, None])):
            a = engine.times(engine.batched(lo, B, P), dep.topo, dep.peaks, dep.eff)
            b = dep.run(B, CONTEXT, prefill_tokens=P, prefill_context=1500.0)
            for f in FIELDS:
                assert same(np.broadcast_to(getattr(a, f), b.shape), getattr(b, f)), f
