"""The host's part in an MoE training step: layers the host cannot launch fast enough, and dispatches that wait.

Launch-bound MoE layers. An unfused MoE layer launches a few hundred kernels per micro-batch (router, permutes,
dispatch and combine, grouped GEMMs, activation, casts, and the backward of each); the host issues them ahead of
the GPU, so the layer costs the larger of the two, never the sum. A small model in small micro-batches (Qwen3-30B-A3B
at micro-batch 1: ~3 ms of GPU work per layer on B200) reaches the host's launch time; a large one does not:
    t_compute' = max(t_compute, n_layer · t_host),   n_layer = m · ceil(L_moe / p)
m micro-batches per step, L_moe the MoE layers, p pipeline stages (the busiest stage holds ceil(L_moe/p)); t_host
(train_moe_layer_s, fitted) the host time of one MoE layer's forward and backward. It separates the micro-batch
sizes of one model on one chip that FLOPs alone cannot: Qwen3-30B-A3B on 8 B200, 18,066 tokens/s/GPU at
micro-batch 1 (Megatron-Bridge 25.09, token-drop) against 26,695 at micro-batch 4 (26.02.01). Fused MoE kernels
with the iteration in one CUDA graph (moe_kernels "fused") launch it as one graph: n_layer = 0.

Host-synchronised dispatch. A dropless MoE layer does not know, before routing runs on the GPU, how many tokens
each expert (and each EP rank) receives; Megatron-Core's all-to-all dispatcher copies those counts to the host and
waits for them before it sizes the all-to-all and the grouped GEMM (megatron/core/transformer/moe/
token_dispatcher.py, ``MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize``, skipped only under drop-and-pad;
Megatron-LM issue #1598: the ``.cpu()`` that breaks CUDA-graph capture; PR #2368: "in token-dropless MoE ... the
host needs this shape information to launch dispatch/combine and grouped GEMM kernels ... this requires
device-to-host copies and host-side synchronization on every step, which slows down training"). DeepEP's normal
dispatch returns the counts as a host list the same way. The wait drains the GPU's queue, so the host's launch of
the rest of the layer is exposed instead of hidden:
    t_sync_total = n_sync · t_sync,   n_sync = host_sync · m · ceil(L_moe / p) · (1 + full recompute)
(core/train_time.py adds it to every stage's chain; the backward reuses the forward's counts). t_sync
(train_moe_sync_s) is fitted. Which dispatchers wait (DISPATCHERS): "alltoall" and "deepep" do; "token_drop"
(capacity factor with drop-and-pad: static shapes, nothing to copy) does not; "hybridep" (DeepEP's hybrid-ep branch,
dispatch and permute in one fused kernel under Megatron-Core's flex dispatcher) is taken as not exposing host time:
the measured switches to it removed the loss. Megatron-Bridge issue #1998: Qwen3-30B-A3B on DGX-H100 and DGX-B200
ran 2x slower dropless (25.11, all-to-all) than token-drop (25.09); the 26.02.01 recipes moved both to HybridEP
(5,113 -> 9,058 tokens/s/GPU on H100; 9,691 -> 26,695 on B200 with micro-batch 1 -> 4). Fused kernels in one CUDA
graph cannot wait for the host inside the graph: no sync.
"""

from __future__ import annotations

import numpy as np

from tokenomy.refusal import choice

DISPATCHERS = {"token_drop": False, "hybridep": False, "alltoall": True, "deepep": True}


def check_dispatcher(name: str) -> str:
    return choice("moe_dispatcher", name, DISPATCHERS, "a token dispatcher")


def layer_passes(fused: bool, moe_layers: int, pp, microbatches):
    """n_layer (module docstring): MoE layers times micro-batches on the busiest stage, launched one kernel at a
    time; 0 for a dense model or fused kernels in one CUDA graph."""
    per_stage = np.ceil(moe_layers / np.asarray(pp, dtype=float))
    return float(moe_layers > 0 and not fused) * np.asarray(microbatches, dtype=float) * per_stage


def sync_passes(dispatcher: str, fused: bool, moe_layers: int, pp, microbatches, full_recompute):
    """n_sync (module docstring): MoE-layer forwards per step on the busiest stage whose dispatch waits for the
    host; 0 for a dense model, a dispatcher that does not wait, or fused kernels in one CUDA graph."""
    waits = float(DISPATCHERS[check_dispatcher(dispatcher)])
    return waits * layer_passes(fused, moe_layers, pp, microbatches) * (1.0 + np.asarray(full_recompute))
