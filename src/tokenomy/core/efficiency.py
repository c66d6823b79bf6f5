"""Efficiency sets: the named gap terms between a roofline and a real system, as the engine consumes them.

    achievable FLOP/s of a GEMM with M rows = peak · η_max · M'/(M' + M_½),  M' = max(M, M_bal)
        η_max for 16-bit GEMMs; ρ·η_max where the compute dtype has 8 bits or fewer (``at_compute``)
        M_bal = peak·η_max·w / (2·bw·η_hbm): the rows at which a GEMM streaming w bytes per operand element spends
        as long computing as reading. Below it the GEMM is memory-bound and its time is the read (the memory term),
        so the tensor cores' small-M inefficiency (M_½) does not add a second, weight-proportional time to compute
        (the engine passes M' = max(M, M_bal)); M_½ = 0 gives a constant fraction
        K-loop depth: a GEMM whose each output element sums K products reaches K/(K + K_½) of that, K_½ = c·k_tile
        (``gemm_half_depth``): an output tile runs K/k_tile steps of its K-loop plus c steps' worth of pipeline
        fill and epilogue, which a shallow K cannot amortise (c: catalog/efficiency/gemm_depth.toml, anchored on
        DeepGEMM's H800 table; k_tile the kernels' K block: 128 elements of 8 bits or fewer, 64 of 16). The engine
        charges it as K_½·Σ F_j/K_j more FLOPs at η(M) (core/times.py), so rows and depth multiply
    achievable HBM bytes/s                  = bw · η_hbm for weights and activations (streamed: η_hbm is the chip's
                                              measured streaming share, catalog/efficiency/streaming.toml, not fitted)
                                            = bw · η_kv for KV-cache reads and writes (paged attention gathers
                                              blocks of a few KB per sequence and head: η_kv < η_hbm; None = η_hbm)
    collectives                             = alpha-beta per topology level, alpha = α_AR when the set gives one,
                                              beta over link_bw · η (core/collectives.py): η_link for the P2P
                                              kernels (custom one-/two-shot all-reduce, all-to-all), η_nccl for a
                                              ring / NVLS all-reduce (NCCL's measured bus bandwidth,
                                              catalog/efficiency/busbw.toml); α_AR is the kernel's own latency,
                                              anchored at its microbenchmark (catalog/efficiency/allreduce.toml)
    host time per step                      = o_step + o_seq·b: the scheduler's CPU work for a step (o_step:
                                              scheduling, batch assembly, launching the graph) and per sequence
                                              of the busiest scheduler (input preparation, sampling output,
                                              detokenisation, stop checks: grows with the running batch; o_seq
                                              is the engine runtime's, catalog/engines [host] runtimes, added by
                                              its profile to the set's own, 0 in the catalog's chip files)
    host overlap                            = h: the share of that host time hidden under the GPU's step: an
                                              engine whose scheduler prepares step i+1 while the GPU runs step i
                                              (SGLang's overlap scheduler, TensorRT-LLM's overlap scheduler,
                                              vLLM's async scheduling) has h = 1 and a step of max(GPU, host);
                                              without it the two add (h = 0). A property of the serving engine
                                              and its version (catalog/engines [host]), not of the chip
    EP overlap                              = ε: the share of the MoE dispatch + combine hidden under compute
                                              (two-batch overlap: one micro-batch's all-to-all under the other's
                                              GEMMs, SGLang --enable-two-batch-overlap, DeepSeek's production
                                              decode and prefill), at the price of launching every kernel once
                                              per micro-batch ((1 + ε)·κ per kernel: LMSYS measured TBO 27% slower
                                              at 32 tokens a GPU and 25% faster at 256, 2025-05-05), each
                                              micro-batch's weight GEMMs at half the rows; 0 without it
                                              (catalog/engines [overlap])
    communication's SMs                     = s: what the dispatch/combine kernels take from the other micro-batch's
                                              kernels while they run, by DeepEP mode: the normal kernels hold a
                                              configured number of SMs for the whole layer (s_n = 20 of 132 on
                                              Hopper: DeepEP Buffer.num_sms; the kernels run on the rest), the
                                              low-latency kernels hold every SM while they send, receive or spin
                                              and none while the data is in flight (s_ll: the share of their time
                                              they hold them) (core/engine.exposed_ep_s)
    per-kernel floor                        = κ per kernel the stage's layers launch (arch/kernels.py: ~12 a dense
                                              GQA layer, ~27 an MLA + indexer + MoE one; launch and small-kernel time that
                                              does not shrink with the batch or with TP)
    imperfect overlap                       = φ·min(compute, memory) added to max(compute, memory): kernels hide
                                              only part of the smaller term under the larger (φ = 0: the roofline)
    eager prompt launch                     = e·K on the host of a pass that carries prompt tokens, where the engine
                                              runs prompts outside CUDA graphs (catalog/engines [prefill_launch]
                                              eager_s_per_kernel; 0 where it captures them or states no
                                              figure): every op launched from Python, one kernel after the other,
                                              so a short prompt's pass waits on its launches (SGLang PR 12160: a
                                              1-token DeepSeek-V3 prefill 82.6 ms eager, 23.1 ms under a CUDA
                                              graph). Added to the host time, hidden under the GPU's as h says
    expert tile                             = B_M: the rows a grouped GEMM pads each routed expert's tokens to (the
                                              engine's MoE kernel: Triton fused_moe's BLOCK_SIZE_M, DeepGEMM's
                                              128-row contiguous segments; catalog/engines [moe_kernel]); the
                                              tensor cores compute the padded rows (core/times.expert_rows_padded);
                                              0: no padding (the roofline)
    mixed prefill                           = m: 1 where a prompt chunk rides in the running batch's decode step
                                              (vLLM V1, TensorRT-LLM in-flight batching), 0 where it runs as a
                                              pass of its own while the decodes wait (SGLang without
                                              --enable-mixed-chunk): that step is the prompt's pass plus the
                                              decode step (serving/scheduler.unmixed_step; catalog/engines
                                              [scheduler] mixed_prefill; not a chip's term, not fitted)
    per-request overhead                    = o_req on time to first token (HTTP, tokenizer, queue entry)
The roofline is the set of ideal values (``ROOFLINE``); a calibrated set holds a chip's fitted terms (built from
catalog/efficiency/<chip>.toml by the answer layer: the core reads no file). Every field may be a float or a numpy
array that broadcasts against the grid (validation evaluates one set per case), or a quantity with units (time-valued
fields in seconds, M_½ in tokens: tests/dims).
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, fields, replace

import numpy as np

from tokenomy import units

FLOPS_PER_WEIGHT = 2.0  # a GEMM's FLOPs per weight per row: one multiply and one add


@dataclass(frozen=True, kw_only=True)  # keyword-only: a new term can never shift a caller's arguments
class Efficiency:
    """Achievable fractions of peak, collective terms and fixed overheads. Defaults: the pure roofline."""

    flops_fraction: object = 1.0  # η_max: the share of peak FLOP/s large 16-bit GEMMs reach
    narrow_flops_ratio: object = 1.0  # ρ: the share of η_max GEMMs in 8 bits or fewer reach (fp8, int8, fp4)
    hbm_fraction: object = 1.0  # η_hbm: streamed weights and activations
    kv_hbm_fraction: object = None  # η_kv: KV-cache reads and writes (paged attention); None = η_hbm
    overhead_s: object = 0.0  # per step (per pipeline stage and micro-batch)
    kernel_overhead_s: object = 0.0  # κ: per kernel a stage's layers launch, per step
    sequence_overhead_s: object = 0.0  # o_seq: per sequence of the busiest scheduler (attention rank), per step
    overlap_loss: object = 0.0  # φ: share of the smaller of compute and memory not hidden under the larger
    hbm_usable_fraction: object = 1.0  # share of HBM capacity that weights + KV + activations may use
    gemm_half_tokens: object = 0.0  # M_½: GEMM rows at which half of η_max is reached
    gemm_fill_steps: object = 0.0  # c: K-loop steps' worth of pipeline fill + epilogue per output tile (K_½ = c·k_tile;
    #                                a kernel's, anchored on published GEMM tables, not fitted; 0: the roofline)
    allreduce_latency_s: object = None  # α of a TP all-reduce step on scale-up (None: the link's latency)
    link_fraction: object = 1.0  # η_link: share of the scale-up link the P2P kernels reach (custom all-reduce shots,
    #                              all-to-all)
    nccl_link_fraction: object = None  # η_nccl: share a ring / NVLS all-reduce reaches (None: η_link)
    host_overlap: object = 0.0  # h: share of the host time per step hidden under the GPU's (overlap scheduler)
    ep_overlap: object = 0.0  # ε: share of the EP dispatch + combine hidden under compute (two-batch overlap)
    ep_sm_normal: object = 0.0  # s_n: share of the SMs the normal (prefill) dispatch/combine kernels hold while they
    #                             run, taken from the other micro-batch's GEMMs (engine profile [overlap])
    ep_sm_low_latency: object = 0.0  # s_ll: share of the low-latency (decode) kernels' time that holds the SMs (send,
    #                                  receive, busy-wait), which nothing overlaps (engine profile [overlap])
    request_overhead_s: object = 0.0  # per request, on time to first token
    eager_prefill_s_per_kernel: object = 0.0  # e: host seconds per kernel of a pass carrying prompt tokens that the
    #                                           engine launches eagerly (engine profile [prefill_launch]; not a chip's term)
    expert_tile_rows: object = 0.0  # B_M: rows each routed expert's tokens are padded to by the engine's grouped GEMM
    #                                 (engine profile [moe_kernel]; not a chip's term, not fitted)
    mixed_prefill: object = 1.0  # m: 1 where prompt chunks ride in the decode step, 0 where they run as their own
    #                              pass (engine profile [scheduler]; read by serving.scheduler, not by the pass)
    name: str = "roofline"  # "roofline", "calibrated" or "custom"
    terms_from: str = ""  # the chip whose fitted terms these are ("pooled" for the prior)
    fitted_on_cases: int = 0
    # True only for a copy whose changed fields were checked one by one (with_, at_compute): the others were when
    # the set was built, and a fit's evaluation copies a chip's set ~10^5 times
    _checked_fields: InitVar[bool] = False

    def __post_init__(self, _checked_fields: bool = False) -> None:
        if not _checked_fields:
            for field in _RANGES:
                _check(field, getattr(self, field))

    def gemm_fraction(self, rows):
        """Achievable share of peak for GEMMs of ``rows`` rows: η_max·M/(M + M_½)."""
        m = np.maximum(rows, 1e-30 * units.TOKEN)  # rows are tokens
        return self.flops_fraction * m / (m + self.gemm_half_tokens)

    def gemm_half_depth(self, narrow):
        """K_½ = c·k_tile: the GEMM depth (elements) at which a K-loop spends as long on its fill and epilogue as on
        its steps. k_tile = 128 elements where the compute dtype has 8 bits or fewer (DeepGEMM's BLOCK_K, one
        128-byte TMA row; CUTLASS's SM90 FP8 tiles), 64 for 16-bit (CUTLASS's SM90 BF16 tiles: the same 128 bytes):
        a step's MMA time is the same either way, so the fill costs the same bytes of depth."""
        if not np.any(self.gemm_fill_steps):
            return 0.0
        return self.gemm_fill_steps * np.where(narrow, 128.0, 64.0) * units.ELEMENT

    def at_compute(self, narrow) -> "Efficiency":
        """The set as GEMMs at the pass's compute dtype see it: η_max·ρ where ``narrow`` (8 bits or fewer: an FP8
        GEMM on H100 runs at ~2x BF16's peak but reaches a smaller share of it; catalog/efficiency fits ρ on the
        chips' FP8/FP4 cases beside their BF16/FP16 ones), η_max itself elsewhere."""
        if np.all(np.asarray(narrow) == 0) or np.all(np.equal(self.narrow_flops_ratio, 1.0)):
            return self
        # η_max·ρ of two validated shares is one too: the copy is not validated again (the engine asks for it on
        # every pass it times; validation's fit times hundreds of thousands)
        return replace(self, _checked_fields=True, flops_fraction=np.where(
            narrow, self.flops_fraction * self.narrow_flops_ratio, self.flops_fraction))

    @property
    def kv_fraction(self):
        """η_kv, or η_hbm where the set has no separate KV share."""
        return self.hbm_fraction if self.kv_hbm_fraction is None else self.kv_hbm_fraction

    def balance_rows(self, peak_flops_per_s, hbm_bytes_per_s, operand_bytes, kv: bool = False):
        """M_bal = peak·η_max·w / (2·bw·η): GEMM rows below which streaming the operand (w bytes per element,
        2 FLOPs per element per row) takes longer than computing: 2·M·N·K / (peak·η_max) = N·K·w / (bw·η), with
        η = η_kv for attention over the KV cache (``kv``), else η_hbm."""
        eta = self.kv_fraction if kv else self.hbm_fraction
        return peak_flops_per_s * self.flops_fraction * operand_bytes / (2.0 * hbm_bytes_per_s * eta)

    def with_(self, **kw) -> "Efficiency":
        """A copy with the fields of ``kw`` set, each checked (the others were, when this set was built: a fit's
        evaluation sets a case's overlaps on its chip's set ~10^5 times)."""
        unknown = sorted(set(kw) - _FIELDS)
        if unknown:
            raise TypeError(f"Efficiency has no field {unknown[0]!r}")
        for field, v in kw.items():
            _check(field, v)
        return replace(self, _checked_fields=True, **kw)


# what each number may be: a share in (0, 1], a share in [0, 1], or a finite number >= 0; None is allowed where the
# field's None has a meaning (η_kv: η_hbm; η_nccl: η_link; α: the link's latency)
_SHARE, _PART, _AMOUNT = "in (0, 1]", "in [0, 1]", "a finite number >= 0"
_RANGES = {**dict.fromkeys(("flops_fraction", "narrow_flops_ratio", "hbm_fraction", "kv_hbm_fraction",
                            "hbm_usable_fraction", "link_fraction", "nccl_link_fraction"), _SHARE),
           **dict.fromkeys(("overlap_loss", "host_overlap", "ep_overlap", "ep_sm_normal", "ep_sm_low_latency",
                            "mixed_prefill"), _PART),
           **dict.fromkeys(("overhead_s", "kernel_overhead_s", "sequence_overhead_s", "gemm_half_tokens",
                            "request_overhead_s", "allreduce_latency_s", "eager_prefill_s_per_kernel",
                            "expert_tile_rows", "gemm_fill_steps"), _AMOUNT)}
_MAY_BE_NONE = {"kv_hbm_fraction", "nccl_link_fraction", "allreduce_latency_s"}
_FIELDS = {f.name for f in fields(Efficiency)}


def _check(field: str, value) -> None:
    """``value`` refused with a one-line ValueError naming ``field`` unless it is what _RANGES allows (every
    element of an array; an amount through numpy's ufuncs, so a quantity with units is checked as it is: zero
    compares with any unit)."""
    rule = _RANGES.get(field)
    if rule is None or value is None and field in _MAY_BE_NONE:
        return
    if rule is _AMOUNT:
        ok = np.isfinite(value) & np.greater_equal(value, 0.0)
    else:
        v = np.asarray(value, dtype=float)
        ok = (v > 0) & (v <= 1) if rule is _SHARE else (v >= 0) & (v <= 1)
    if not np.all(ok):
        raise ValueError(f"{field}: must be {rule}, got {value}")



ROOFLINE = Efficiency()
EFFICIENCY_SETS = ("calibrated", "roofline")
