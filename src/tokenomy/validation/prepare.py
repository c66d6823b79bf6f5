"""Turn validation cases into arrays of roofline quantities, once; predictions are then cheap numpy expressions.

For every serving case: FLOPs and bytes of one decode step on a grid of batch sizes (at the case's mean decode
context), FLOPs and non-weight bytes per interleaved prefill token, one standalone prefill pass, the KV-capacity
batch limit, and the chip's peaks. All of it comes from core/roofline.step at Efficiency() (the pure roofline).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.coeffs import ModelCoeffs, coefficients
from tokenomy.core.roofline import HwCoeffs, step
from tokenomy.units import dtype_bytes
from tokenomy.validation.load import Case
from tokenomy.validation.schema import ServingCase, TrainingCase
from tokenomy.validation.terms import pipeline_bubble

GRID = 2.0 ** np.arange(0, 15)  # decode batch grid, 1 .. 16384 sequences
RUNTIME_RESERVE_BYTES = 3e9  # per chip, outside weights and KV: CUDA context, activation buffers, graphs (declared)
DEFAULT_MAX_BATCH = 4096  # scheduler cap when a source does not publish one (TensorRT-LLM's example log shows 4096)
HIGH_PRECISION_EMBED = 2.0  # quantized checkpoints keep embeddings and LM head in 16-bit (ModelOpt, Quark, AQT)
SCENARIO_CODE = {s: i for i, s in enumerate(("static_batch", "prefill", "decode", "concurrency", "request_rate",
                                              "max_throughput"))}
METRIC_CODE = {m: i for i, m in enumerate(("tpot_s", "ttft_s", "latency_s", "throughput_per_chip"))}


@lru_cache(maxsize=None)
def _coeffs(model: str) -> ModelCoeffs:
    return coefficients(loader.model(model))


def quantized(c: ModelCoeffs, weight_dtype: str) -> ModelCoeffs:
    wb = dtype_bytes(weight_dtype)
    return dataclasses.replace(c, dense_w=wb, expert_w=wb, embed_w=max(wb, HIGH_PRECISION_EMBED))


@dataclass
class Serving:
    """Arrays over N serving cases (G = len(GRID))."""

    cases: list[Case]
    chip: np.ndarray  # chip name per case
    scenario: np.ndarray  # SCENARIO_CODE
    metric: np.ndarray  # METRIC_CODE
    measured: np.ndarray
    n: np.ndarray  # chips
    tp: np.ndarray
    peak: np.ndarray  # FLOP/s per chip at the compute dtype
    bw: np.ndarray  # HBM bytes/s per chip
    link_bw: np.ndarray  # scale-up bytes/s per chip per direction
    layers: np.ndarray
    hidden: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    batch: np.ndarray  # fixed batch (static/prefill/decode), else NaN
    concurrency: np.ndarray
    rate: np.ndarray
    cap: np.ndarray  # scheduler cap on the decode batch
    bmax: np.ndarray  # KV-capacity batch limit at ISL + OSL per sequence
    dec_flops: np.ndarray  # [N, G]
    dec_bytes: np.ndarray  # [N, G]
    expert_flops_tok: np.ndarray  # routed-expert GEMM FLOPs per token (0 for dense models)
    expert_rows: np.ndarray  # k/E: the share of a step's tokens each expert GEMM sees
    pf_flops_tok: np.ndarray  # per interleaved prefill token
    pf_bytes_tok: np.ndarray  # KV written + activations per prefill token (weights are already read by the step)
    pass_tokens: np.ndarray  # tokens of the standalone prefill pass
    pass_flops: np.ndarray
    pass_bytes: np.ndarray
    fits: np.ndarray  # fixed-batch cases: weights + KV fit in HBM

    def take(self, mask) -> "Serving":
        """The cases where ``mask`` is true (or at the given indices)."""
        idx = np.flatnonzero(mask) if np.asarray(mask).dtype == bool else np.asarray(mask)
        return Serving(**{f.name: ([getattr(self, f.name)[i] for i in idx] if f.name == "cases"
                                   else getattr(self, f.name)[idx]) for f in dataclasses.fields(self)})


def _hw(c: ServingCase | TrainingCase, dtype: str):
    chip = loader.hardware(c.hardware).chip
    _, peak = chip.flops_for(dtype)
    return chip, peak


def _ctx_decode(c: ServingCase) -> float:
    """Mean context during decode: ISL plus half the output (static and continuous batching alike)."""
    return c.isl + c.osl / 2.0


def prepare_serving(cases: list[Case]) -> Serving:
    rows = [c for c in cases if c.kind == "serving"]
    N = len(rows)
    out = {k: np.full(N, np.nan) for k in ("n", "tp", "peak", "bw", "link_bw", "layers", "hidden", "isl", "osl",
                                          "batch", "concurrency", "rate", "cap", "bmax", "pf_flops_tok",
                                          "expert_flops_tok", "expert_rows", "pf_bytes_tok", "pass_tokens",
                                          "pass_flops", "pass_bytes", "measured")}
    dec_flops, dec_bytes = np.zeros((N, GRID.size)), np.zeros((N, GRID.size))
    fits = np.ones(N, dtype=bool)
    for i, case in enumerate(rows):
        c: ServingCase = case.case
        chip, peak = _hw(c, c.weight_dtype)
        m = quantized(_coeffs(c.model), c.weight_dtype)
        hw = HwCoeffs(peak, chip.hbm_bytes_per_s, chip.hbm_bytes)
        kvb = dtype_bytes(c.kv_dtype)
        arch = loader.model(c.model)
        dec = step(m, hw, GRID, _ctx_decode(c), 1, c.chips, kv_bytes_per_elem=kvb)
        dec_flops[i] = dec.flops
        dec_bytes[i] = dec.weight_bytes + dec.kv_read_bytes + dec.kv_write_bytes + dec.act_bytes
        one = step(m, hw, 1, c.isl, c.isl, c.chips, kv_bytes_per_elem=kvb)
        pf_b = float(c.batch) if c.scenario in ("static_batch", "prefill") else 1.0
        pf = step(m, hw, pf_b, c.isl, c.isl, c.chips, kv_bytes_per_elem=kvb)
        cap_seq = step(m, hw, 1, c.isl + c.osl, 1, c.chips, kv_bytes_per_elem=kvb)
        free = float(chip.hbm_bytes - cap_seq.weight_bytes_per_chip - RUNTIME_RESERVE_BYTES)
        bmax = np.floor(c.kv_free_fraction * max(free, 0.0) / float(cap_seq.kv_bytes_per_chip))
        if c.batch is not None:
            need = cap_seq.weight_bytes_per_chip + c.batch * cap_seq.kv_bytes_per_chip
            fits[i] = bool(need <= chip.hbm_bytes)
        vals = dict(n=c.chips, tp=c.tp, peak=peak, bw=chip.hbm_bytes_per_s, link_bw=chip.scale_up.bytes_per_s,
                    layers=arch.num_layers, hidden=arch.hidden_size, isl=c.isl, osl=c.osl,
                    batch=c.batch if c.batch is not None else np.nan,
                    concurrency=c.concurrency if c.concurrency is not None else np.nan,
                    rate=c.request_rate if c.request_rate is not None else np.nan,
                    cap=c.max_batch or DEFAULT_MAX_BATCH, bmax=bmax,
                    pf_flops_tok=float(one.flops) / c.isl,
                    expert_flops_tok=2.0 * m.moe_layers * m.experts_per_tok * m.expert_params,
                    expert_rows=m.experts_per_tok / m.num_experts if m.num_experts > 1 else 1.0,
                    pf_bytes_tok=float(one.kv_write_bytes + one.act_bytes) / c.isl,
                    pass_tokens=pf_b * c.isl, pass_flops=float(pf.flops),
                    pass_bytes=float(pf.weight_bytes + pf.kv_read_bytes + pf.kv_write_bytes + pf.act_bytes),
                    measured=c.value)
        for k, v in vals.items():
            out[k][i] = v
    return Serving(cases=rows, chip=np.array([c.case.hardware for c in rows]),
                   scenario=np.array([SCENARIO_CODE[c.case.scenario] for c in rows]),
                   metric=np.array([METRIC_CODE[c.case.metric] for c in rows]),
                   dec_flops=dec_flops, dec_bytes=dec_bytes, fits=fits, **out)


@dataclass
class Training:
    """Arrays over M training cases: roofline step times and the pipeline bubble."""

    cases: list[Case]
    chip: np.ndarray
    measured: np.ndarray  # step seconds
    roofline_s: np.ndarray  # 3 x forward FLOPs / (chips · peak at the training precision)
    roofline_bf16_s: np.ndarray  # the same at the bf16 peak (the scale of non-GEMM work)
    bubble: np.ndarray
    moe: np.ndarray  # bool

    def take(self, mask) -> "Training":
        idx = np.flatnonzero(mask) if np.asarray(mask).dtype == bool else np.asarray(mask)
        return Training(**{f.name: ([getattr(self, f.name)[i] for i in idx] if f.name == "cases"
                                    else getattr(self, f.name)[idx]) for f in dataclasses.fields(self)})


def microbatches(c: TrainingCase) -> float:
    """Micro-batches per pipeline per step from the published settings: GBS / (MBS · DP), DP = n/(tp·pp·cp)."""
    dp = c.chips / (c.tp * c.pp * c.cp)
    return max(c.global_batch / (c.micro_batch * dp), 1.0)


def prepare_training(cases: list[Case]) -> Training:
    rows = [c for c in cases if c.kind == "training"]
    roof, roof16, bub, moe, meas = (np.zeros(len(rows)) for _ in range(5))
    for i, case in enumerate(rows):
        c: TrainingCase = case.case
        chip, peak = _hw(c, c.precision)
        _, peak16 = chip.flops_for("bf16")
        m = _coeffs(c.model)
        fwd = step(m, HwCoeffs(peak, chip.hbm_bytes_per_s, chip.hbm_bytes), 1, c.seq_len, c.seq_len, 1)
        flops_step = 3.0 * float(fwd.flops) * c.global_batch  # forward + backward (2x) per sequence
        roof[i] = flops_step / (c.chips * peak)
        roof16[i] = flops_step / (c.chips * peak16)
        bub[i] = pipeline_bubble(c.pp, c.vp, microbatches(c))
        moe[i] = float(m.num_experts) > 1
        meas[i] = c.value
    return Training(cases=rows, chip=np.array([c.case.hardware for c in rows]), measured=meas, roofline_s=roof,
                    roofline_bf16_s=roof16, bubble=bub, moe=moe.astype(bool))
