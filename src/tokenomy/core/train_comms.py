"""A training step's communication per chip, by parallel dimension: the traffic core/train_time.py overlaps.

Collective costs are core/collectives.py's (alpha-beta per topology level). ``p`` is a core.training.TrainPlan.
"""

from __future__ import annotations

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.collectives import all_reduce, p2p, reduce_scatter
from tokenomy.core.memory import TrainMemory
from tokenomy.core.schedules import chunks_per_rank
from tokenomy.specs import Topology


def step_comms(m: ModelArch, c, topo: Topology, p, mem: TrainMemory, e: float, grad_bytes,
           strategy: str) -> dict:
    """Per-chip communication seconds of one step, by parallel dimension (core/collectives.py).

    Rank order, innermost first: TP, CP, DP (EP ranks within DP·CP), PP; a group's stride is the product of
    the degrees inside it. Per micro-batch and layer: TP 4 all-reduces of the layer's activations (2 forward,
    2 backward; with SP the same bytes as all-gather + reduce-scatter), CP 3(cp-1) K/V block sends (ring attention); recompute repeats the forward ones.
    Per step: DP all-reduce of gradients (ZeRO <= 2) or, per micro-batch, all-gather x2 + reduce-scatter
    (ZeRO-3/FSDP); PP sends activations forward and gradients back, 2·m·v hops, v the chunks a rank holds
    (interleaved: its virtual stages; ZB-V: 2, "2x" the pipeline traffic of 1F1B, sail-sg/zero-bubble-pipeline-
    parallelism README; core/schedules.chunks_per_rank).
    """
    tp, pp, cp, dp, ep = (np.asarray(x, dtype=float) for x in (p.tp, p.pp, p.cp, p.dp, p.ep))
    mb, D, L = p.microbatches, m.hidden_size, m.num_layers
    tokens = np.asarray(p.micro_batch, dtype=float) * p.seq_len / cp  # per micro-batch on this chip's CP rank
    layers = np.ceil(L / pp)
    redo = 1.5 if strategy in ("full", "reversible") else 1.0  # recomputed forwards repeat their collectives
    tp_s = 4 * redo * layers * mb * all_reduce(topo, tp, tokens * D * e)
    kv = tokens * float(c.kv_elems_per_token) / L * e
    hop_cp = p2p(topo, kv, topo.chips_in_domain(cp, tp) < cp)
    cp_s = np.where(cp > 1, 3 * (cp - 1) * layers * mb * hop_cp, 0.0)
    hop = p2p(topo, tokens * D * e / (tp if p.sp else 1.0), topo.chips_in_domain(2, tp * cp * dp) < 2)
    pp_s = np.where(pp > 1, 2 * mb * chunks_per_rank(p.schedule, p.virtual_stages) * hop, 0.0)
    pp_exposed = np.where(pp > 1, 2 * (pp - 1) * hop, 0.0)  # pipeline fill and drain wait on the hops
    zero = np.asarray(p.zero, dtype=float)
    g_dense = grad_bytes * mem.dense_params_per_chip
    g_expert = grad_bytes * (mem.params_per_chip - mem.dense_params_per_chip)
    edp = np.maximum(dp * cp / ep, 1)  # expert data-parallel group
    moe = g_expert > 0  # dense models have no expert group to reduce over
    ddp = all_reduce(topo, dp * cp, g_dense, stride=tp) + np.where(moe, all_reduce(topo, edp, g_expert, tp * ep), 0)
    fsdp = 3 * mb * (reduce_scatter(topo, dp * cp, g_dense, stride=tp)
                     + np.where(moe, reduce_scatter(topo, edp, g_expert, tp * ep), 0))
    dp_s = np.where(zero >= 3, fsdp, ddp)
    # DDP overlaps the last micro-batch's backward; FSDP prefetches its gathers under all the compute.
    dp_hide = np.where(zero >= 3, 1.0, (2 / 3) / mb)  # share of the compute time that hides DP traffic
    return dict(tp_s=tp_s, cp_s=cp_s, dp_s=dp_s, dp_hide=dp_hide, pp_s=pp_s, pp_exposed_s=pp_exposed,
                ep_overlap=np.clip(np.asarray(p.ep_overlap, dtype=float), 0.0, 1.0))
