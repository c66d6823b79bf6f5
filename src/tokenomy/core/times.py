"""The critical path of a pass from its work (core/work.py) under an efficiency set (the pass engine's times,
core/engine.py): per stage and micro-batch

    compute   = [(F_dense + K_½·D_dense)/η(T_a) + max((F_e + K_½·D_e)/η(m), (F_e + K_½·D_e)·(m_p/m)/η_max)] / peak
                + F_attn/η_a(S·H/max(K, a))/peak_a,
                m = A/x rows per expert, m_p those rows padded to the engine's MoE kernel tile (``expert_rows_padded``);
                D = Σ F_j/K_j the depth FLOPs (core/work.py): each output tile's K-loop pays K_½ of fill and epilogue
                (``Efficiency.gemm_half_depth``); the attention at the KV cache's dtype (``Peaks``; ``_compute_s``)
    memory    = (1 + ε)·weights/(bw·η_hbm) + KV/(bw·η_kv) + activations/(bw·η_hbm)          (``kernel_terms``)
    TP, EP    = n_AR·all-reduce + q all-to-alls; dispatch + combine all-to-alls              (``_comms_s``)
    EP left   = EP − ε·hidden under the kernels, by DeepEP mode                              (``exposed_ep_s``)
    GPU       = max(compute, memory) + φ·min(compute, memory) + TP + EP left + (1 + ε)·f·K·κ
    host      = o_step + o_seq·b_a (+ e·K where an eager engine's pass carries prompt tokens: ``eager_prompt_s``);
                exposed = host − h·min(host, GPU)                                              (``exposed_host_s``)
    stage     = GPU + exposed host
    period    = decode: max(M·stage, pp·stage + pp·hop); longer: (M + pp − 1)·stage + (pp − 1)·hop
and the fit: weights + KV + activations over the usable HBM gets NaN times and FITS_REASON (core/reasons.py).
The answer is a PassTerms (core/pass_terms.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.core import collectives as col
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.pass_terms import PassTerms
from tokenomy.core.reasons import FITS_REASON
from tokenomy.core.work import Work
from tokenomy.specs import Topology
from tokenomy import units
from tokenomy.units import floats

_f = floats


@dataclass(frozen=True)
class Peaks:
    """Per-chip peaks the pass runs against (floats, arrays or quantities)."""

    flops_per_s: object  # at the compute dtype
    hbm_bytes_per_s: object
    hbm_bytes: object
    narrow: object = False  # the compute dtype is 8 bits or fewer: GEMMs reach ρ·η_max (efficiency.py)
    # the attention's q·k and p·v at the KV cache's dtype (None: the compute dtype's): FlashMLA and FlashAttention
    # multiply a BF16 cache in BF16 beside FP8 weight GEMMs ("core MLA computations ... use the BF16 format",
    # github.com/deepseek-ai/open-infra-index, day 6; FlashMLA README: BF16 and FP8 KV)
    attn_flops_per_s: object = None
    attn_narrow: object = None


def _calibrated(topo: Topology, eff: Efficiency) -> Topology:
    """The topology as the efficiency set sees it: scale-up α and achievable link bandwidth."""
    if eff.allreduce_latency_s is None and np.all(_f(eff.link_fraction) == 1.0):
        return topo
    up = topo.scale_up
    lat = up.latency_s if eff.allreduce_latency_s is None else eff.allreduce_latency_s
    return replace(topo, scale_up=replace(up, latency_s=lat, bytes_per_s=up.bytes_per_s * _f(eff.link_fraction)))


def kernel_terms(w: Work, peaks: Peaks, eff: Efficiency = ROOFLINE) -> tuple:
    """(compute, weights read, KV read, activations) seconds of a lowered pass's kernels, before any fit or validity
    mask: compute at the GEMM efficiency of its rows, each read at its bandwidth (weights streamed 1 + ε times under
    two-batch overlap). Linear in the work's sums, so a part of the op list (core/op_costs) gets its own share."""
    bw = peaks.hbm_bytes_per_s * eff.hbm_fraction  # streamed weights and activations
    kv_bw = bw if eff.kv_hbm_fraction is None else peaks.hbm_bytes_per_s * eff.kv_hbm_fraction  # paged KV gathers
    return _compute_s(w, peaks, eff), _tbo(eff) * w.weight_bytes / bw, w.kv_bytes / kv_bw, w.act_bytes / bw


def _compute_s(w: Work, peaks: Peaks, eff: Efficiency):
    """[F_dense / η(M_dense) + max(F_expert / η(M_expert), F_expert·(m_p/m) / η_max)] / peak + F_attn / η_a(M_attn) /
    peak_a, each GEMM at rows no fewer than its balance rows: below them it is memory-bound and its time is the read,
    counted in memory_s (efficiency.py). η_max is the set's 16-bit share, times ρ where the GEMM's dtype is narrow
    (``Efficiency.at_compute``): the weight GEMMs' the compute dtype, the attention's the KV cache's (``Peaks``).
    The routed experts' grouped GEMM computes every expert's rows padded to its kernel's tile, m_p
    (``expert_rows_padded``): those tiles run at the full share η_max, a floor under the small-M share η(m) (a
    128-row DeepGEMM segment for one token is 128 rows of MMA whatever M_½ says; charged at η(m_p) instead, a
    16-row Triton tile would take a chip whose balance rows are few, an H20, ~6x its read at batch 1).
    Every weight GEMM's FLOPs F count K_½·Σ F_j/K_j more (``Efficiency.gemm_half_depth``): an output tile's K-loop
    of K/k_tile steps also fills its pipeline and runs its epilogue, which a shallow K cannot amortise (a GEMM of
    depth K reaches K/(K + K_½) of a deep one's rate: catalog/efficiency/gemm_depth.toml). The attention's kernels
    loop over the context, not a weight's depth: no K_½ there."""
    peak_a = peaks.flops_per_s if peaks.attn_flops_per_s is None else peaks.attn_flops_per_s
    eff_a = eff.at_compute(peaks.narrow if peaks.attn_narrow is None else peaks.attn_narrow)
    eff = eff.at_compute(peaks.narrow)

    def share(e, peak, rows, operand_bytes, kv=False):
        balance = e.balance_rows(peak, peaks.hbm_bytes_per_s, operand_bytes, kv)
        return e.gemm_fraction(np.maximum(rows, balance))
    split = _tbo(eff)  # two-batch overlap: each micro-batch's weight GEMMs get half the rows
    half_depth = eff.gemm_half_depth(peaks.narrow)
    # (a roofline's K_½ is a bare 0, not elements: the dimensional tests' flop/elem terms must not be added then)
    dense = w.dense_flops + half_depth * w.dense_flops_per_k if np.any(half_depth) else w.dense_flops
    flops_s = dense / share(eff, peaks.flops_per_s, w.dense_rows / split, w.dense_w)
    if np.any(w.expert_flops):  # a dense model's 0/η adds nothing
        rows = w.expert_rows / split
        experts = w.expert_flops + half_depth * w.expert_flops_per_k if np.any(half_depth) else w.expert_flops
        expert_s = experts / share(eff, peaks.flops_per_s, rows, w.expert_w)
        if np.any(eff.expert_tile_rows):  # the padded tiles at the full rate: a floor under the small-M share
            tiles_s = experts * (expert_rows_padded(rows, eff.expert_tile_rows) / rows) / eff.flops_fraction
            expert_s = np.maximum(expert_s, tiles_s)
        flops_s = flops_s + expert_s
    return flops_s / peaks.flops_per_s + w.attn_flops / share(eff_a, peak_a, w.attn_rows, w.kv_w, True) / peak_a


def expert_rows_padded(rows, tile_rows):
    """m_p: the rows a grouped GEMM computes for each routed expert that gets m = ``rows`` tokens when it pads every
    expert's tokens to whole tiles of B_M = ``tile_rows`` rows (Triton fused_moe's BLOCK_SIZE_M, DeepGEMM's 128-row
    contiguous segments: catalog/engines [moe_kernel]): the expected B_M·ceil(m_e/B_M) over experts whose loads
    spread about m, taken as max(B_M, m + B_M/2) — one whole tile for an expert with fewer tokens than a tile (the
    decode case: every expert read computes B_M rows), half a tile wasted on average at loads of many tiles. B_M = 0:
    m itself (no padding: the roofline). The padded rows cost tensor-core time, not HBM reads: the expert's weights
    are read once whatever its rows."""
    if not np.any(tile_rows):
        return rows
    tile = _f(tile_rows) * units.TOKEN  # a count of rows: tokens (tests/dims)
    return np.where(np.asarray(tile_rows) > 0, np.maximum(tile, rows + tile / 2.0), rows)


def _comms_s(w: Work, topo: Topology, ring_share=1.0):
    """(TP, EP) seconds: n_AR all-reduces (+ batch-sharded-KV all-to-alls) and the dispatch + combine all-to-alls;
    ``ring_share``: η_nccl/η_link, the ring all-reduce's bandwidth over the P2P kernels' (``topo`` carries η_link)."""
    tp = w.ar_count * col.all_reduce_cost(topo, w.ar_group, ring_share=ring_share)(w.ar_bytes)
    if np.any(w.q_count > 0):
        tp = tp + np.where(w.q_count > 0, w.q_count * col.all_to_all_cost(topo, w.ar_group)(w.q_bytes), 0.0)
    if not np.any(w.ep_count > 0):  # no dispatch and combine (no attention-DP with
        return tp, 0.0  # EP): 0, not formed (quantities take the masked sum: its unit is checked, tests/dims)
    # the normal kernels (a prefill pass: _ep_shares) move MB-sized chunks over NVLink at the bulk
    # rate the ring reaches (DeepEP intranode: 153 GB/s of the H800's 200), not the P2P kernels' η_link, fitted on
    # decode-sized all-reduces
    up_share = w.ep_up_share / np.where(w.ep_low_latency, 1.0, ring_share)
    a2a = col.all_to_all_cost(topo, w.ep_group, w.ep_stride, (up_share, w.ep_out_share))(w.ep_bytes)
    return tp, np.where(w.ep_count > 0, w.ep_count * a2a, 0.0)


def _tbo(eff: Efficiency):
    """1 + ε: how many times a step launches its kernels and streams its weights under two-batch overlap, and by how
    much each weight GEMM's rows shrink (each micro-batch runs every layer on its half of the tokens: LMSYS measured
    TBO 27% slower than none at 32 tokens a GPU, 25% faster at 256, where "GEMM benefit from a larger effective
    batch size" without it, 2025-05-05)."""
    return 1.0 + _f(eff.ep_overlap)


def _sm_share(w: Work, eff: Efficiency):
    """s: the SMs the dispatch/combine takes from the kernels it overlaps, by the DeepEP mode of the pass (the
    low-latency kernels for decode-shaped passes, the normal ones for prefill: _ep_shares); 0 without overlap."""
    normal, low = _f(eff.ep_sm_normal), _f(eff.ep_sm_low_latency)
    if not np.any(_f(eff.ep_overlap)) or not (np.any(normal) or np.any(low)):
        return 0.0
    return np.where(w.ep_low_latency, low, normal)


def exposed_ep_s(ep_s, compute_s, ep_overlap, sm_share=0.0, low_latency=True):
    """EP dispatch + combine left on the critical path under two-batch overlap ε, kernels k = max(compute, memory).
    Two-batch overlap splits the step into two micro-batches and runs one's all-to-all while the other's kernels run
    (SGLang two-batch overlap, DeepSeek's inference system, open-infra-index day 6): at most the kernels hide it, and
    only as far as its kernels leave them the SMs (s, by DeepEP mode; s = 0: ep − ε·min(ep, k)):
      low-latency kernels (decode, ``low_latency``) hold every SM while they send, receive or spin and none while the
        data is in flight (DeepSeek's decode profile: communication on 0 SMs; LMSYS 2025-05-05): the share s of their
        time serialises, ep − ε·min((1 − s)·ep, k);
      normal kernels (prefill) hold s of the SMs for the whole overlapped layer (DeepSeek's prefill profile:
        computation on 108 SMs, communication on 24; LMSYS: every kernel slower under TBO, "reduced SMs"): with ε = 1
        the pair takes max(ep, k/(1 − s)), so ep − ε·(ep + k − max(ep, k/(1 − s))) is left beyond the kernels
        (github.com/deepseek-ai/profile-data)."""
    if not np.any(sm_share):
        return ep_s - ep_overlap * np.minimum(ep_s, compute_s)
    hidden_ll = np.minimum((1.0 - sm_share) * ep_s, compute_s)
    hidden_normal = ep_s + compute_s - np.maximum(ep_s, compute_s / (1.0 - sm_share))
    return ep_s - ep_overlap * np.where(low_latency, hidden_ll, hidden_normal)


def exposed_host_s(host_s, gpu_s, host_overlap):
    """Host time left on the critical path: host − h·min(host, GPU). An overlap scheduler (h = 1) prepares step
    i + 1 while the GPU runs step i, so a step takes max(GPU, host); without one (h = 0) the CPU work and the
    GPU's add (SGLang's zero-overhead batch scheduler, v0.4 blog; TensorRT-LLM's and vLLM's async schedulers)."""
    return host_s - host_overlap * np.minimum(host_s, gpu_s)


def eager_prompt_s(w: Work, eff: Efficiency):
    """e·K: the host's launches of a pass that carries prompt tokens where the engine runs prompts eagerly (no CUDA
    graph: every kernel launched from Python), 0 on a decode step without them, which replays its graph. A prefill
    pass carries its prompt; a decode step carries the prompt tokens its busiest attention replica adds to its
    sequences' one each (dense rows beyond host_seqs·len_pass)."""
    e = _f(eff.eager_prefill_s_per_kernel)
    if not np.any(e):
        return 0.0
    prompt = np.where(w.decode, w.dense_rows - w.host_seqs * w.len_pass > 0.5, True)
    return np.where(prompt, e * w.stage_kernels, 0.0)


def usable_hbm_bytes(peaks: Peaks, eff: Efficiency = ROOFLINE):
    """The HBM per chip that weights + KV + activations may fill: the chip's (the driver-exposed bytes,
    Deployment.peaks) times the set's usable share."""
    return peaks.hbm_bytes * eff.hbm_usable_fraction


def hbm_left_bytes(w: Work, hbm_bytes):
    """The pass engine's one fit rule: ``hbm_bytes`` (``usable_hbm_bytes``) − (weights + KV) − activations per chip,
    the per-batch parts summed first (the activations are per load); the pass fits where it is >= 0. ``times`` masks
    the points below with FITS_REASON (``over_hbm``), and the serving side asks it for the batch the engine times
    (serving/kv_capacity.engine_sequences)."""
    return hbm_bytes - (w.weight_bytes_per_chip + w.kv_bytes_per_chip) - w.act_bytes_per_chip


def over_hbm(w: Work, hbm_bytes):
    """Where a pass does not fit: ``hbm_left_bytes`` < 0 (the sign of a float difference is exact: the same points
    as activations > HBM − (weights + KV))."""
    return hbm_left_bytes(w, hbm_bytes) < 0


def times(w: Work, topo: Topology, peaks: Peaks, eff: Efficiency = ROOFLINE) -> PassTerms:
    """Time a lowered pass under an efficiency set: stage terms, pass period, binding term, fit (module
    docstring). Every time gets ``nan`` (0, or NaN where the point is invalid or does not fit) added once."""
    compute_s, weights_read_s, kv_s, act_s = kernel_terms(w, peaks, eff)
    memory_s = weights_read_s + kv_s + act_s
    ring_share = 1.0 if eff.nccl_link_fraction is None else _f(eff.nccl_link_fraction) / _f(eff.link_fraction)
    tp_comm, ep_all = _comms_s(w, _calibrated(topo, eff), ring_share)
    hbm = usable_hbm_bytes(peaks, eff)
    reason = np.where(np.asarray(w.structure) != 0, w.structure, np.where(over_hbm(w, hbm), FITS_REASON, 0))
    nan = np.where(reason == 0, 0.0, np.nan)  # every time gets it: NaN where the point is invalid or over HBM
    sm_share = _sm_share(w, eff)
    ep_comm = exposed_ep_s(ep_all, np.maximum(compute_s, memory_s), _f(eff.ep_overlap), sm_share,  # under the other's
                           w.ep_low_latency)
    compute_s, memory_s = compute_s + nan, memory_s + nan
    comms_s = tp_comm + ep_comm + nan  # = (tp + nan) + (ep + nan): the parts are read lazily
    floor = _f(eff.kernel_overhead_s) * _tbo(eff) * w.stage_kernels
    host = _f(eff.overhead_s) + _f(eff.sequence_overhead_s) * w.host_seqs + eager_prompt_s(w, eff)
    top = np.maximum(compute_s, memory_s)
    overlap = eff.overlap_loss * np.minimum(compute_s, memory_s)  # the part of the smaller term kernels do not hide
    gpu_s = top + overlap + comms_s + floor
    host_s = exposed_host_s(host, gpu_s, _f(eff.host_overlap))
    overhead = floor + host_s + nan
    stage_s = gpu_s + host_s
    pp = w.pp
    hops = np.where(pp > 1, np.where(w.decode, pp, pp - 1.0), 0.0)
    # no hops (pp = 1): hops·hop is 0 (NaN only where the stage is NaN), adds nothing and binds nothing
    hop_total = None if not np.any(hops) else hops * (w.hop_s + nan)
    h = 0.0 if hop_total is None else hop_total
    period = np.where(w.decode, np.maximum(w.microbatches * stage_s, pp * stage_s + h),  # decode: the slower of
                      (w.microbatches + pp - 1.0) * stage_s + h)  # M stages and a pass through all; else the fill
    return PassTerms(
        chips=w.n, batch=w.batch, context=w.context, len_pass=w.len_pass, micro_batch=w.micro_batch, flops=w.flops,
        attention_flops=w.attention_flops, compute_s=compute_s, memory_s=memory_s, comms_s=comms_s, overhead_s=overhead, stage_s=stage_s, hops=hops, step_s=period,
        weight_bytes_per_chip=w.weight_bytes_per_chip, kv_bytes_per_chip=w.kv_bytes_per_chip,
        act_bytes_per_chip=w.act_bytes_per_chip, hbm_bytes=hbm,
        expert_rows=w.expert_rows, experts_read=w.experts_read, rack_hop_ratio=w.rack_hop_ratio, reason=reason,
        nan=nan, unmasked=(weights_read_s, kv_s, act_s, w.hop_s, tp_comm, ep_comm), flops_per_s=peaks.flops_per_s,
        hop_share_s=None if hop_total is None else hop_total / pp, floor_s=floor, microbatches=w.microbatches,
        path=(overlap, ep_all - ep_comm, host, host - host_s))
