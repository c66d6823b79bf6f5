"""Pydantic schema of the validation catalog (catalog/validation/*.toml); the fitted efficiency files'
(catalog/efficiency/*.toml) is validation/terms_schema.py's.

A validation file is one published source: ``[source]`` (URL, date, framework), ``[defaults]`` (settings shared by
its rows), ``serving = [...]`` or ``training = [...]`` (one published measurement per row, every setting needed to
reproduce it) and ``skipped = [...]`` (rows of the source that were not used, and why). Values are SI: seconds,
tokens/s per chip.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tokenomy.catalog.schema.engine_host import RunVersion
from tokenomy.core.recompute_modules import MODULES

RecomputeModule = Literal[MODULES]  # Megatron-Core's names (core/recompute_modules.py)

AS_OF = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
SCENARIOS = ("static_batch", "prefill", "decode", "concurrency", "request_rate", "max_throughput")
SERVING_METRICS = ("tpot_s", "ttft_s", "latency_s", "throughput_per_chip")
METRICS = (*SERVING_METRICS, "train_step_s")
Scenario = Literal["static_batch", "prefill", "decode", "concurrency", "request_rate", "max_throughput"]
Metric = Literal["tpot_s", "ttft_s", "latency_s", "throughput_per_chip"]
# How the published run issued and measured its requests: the benchmark tool (catalog/protocols/<name>.toml once
# encoded) or "steady" (a steady-state figure: no benchmark run to reproduce, or none stated).
Protocol = Literal["steady", "vllm-bench", "sglang-bench", "aiperf", "guidellm", "inferencex", "trtllm-bench",
                   "mlperf-server", "mlperf-offline", "llmperf"]
PROTOCOLS = get_args(Protocol)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Strict):
    id: str
    title: str
    url: str
    as_of: str
    kind: str
    framework: str
    note: str = ""

    @field_validator("as_of")
    @classmethod
    def _date(cls, v: str) -> str:
        if not AS_OF.match(v):
            raise ValueError("as_of must be YYYY, YYYY-MM or YYYY-MM-DD")
        return v

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith("https://"):
            raise ValueError("url must be an https:// address")
        return v


class Skipped(_Strict):
    what: str
    why: str


class Pool(_Strict):
    """One pool of a disaggregated case: its chips (workers x chips per worker) and the layout of each worker, as
    core.layout.Layout states it (attention-DP over the ep ranks where ``attn_dp``, else attention TP over them)."""

    chips: int = Field(gt=0)
    tp: int = Field(default=1, gt=0)
    ep: int = Field(default=1, gt=0)
    pp: int = Field(default=1, gt=0)
    attn_dp: bool = False
    max_batch: int | None = Field(default=None, gt=0)  # sequences per scheduler (vLLM --max-num-seqs) when published
    max_num_tokens: int | None = Field(default=None, gt=0)  # tokens per scheduler step (--max-num-batched-tokens)
    # share of total HBM the engine takes for weights, activations and KV (vLLM --gpu-memory-utilization, SGLang
    # --mem-fraction-static); None: the case's own rule (ServingCase: kv_free_fraction, gpu_memory_utilization)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)

    @model_validator(mode="after")
    def _whole_workers(self) -> "Pool":
        if self.chips % (self.tp * self.ep * self.pp):
            raise ValueError(f"pool of {self.chips} chips: chips must be a multiple of tp*ep*pp")
        return self


class ServingCase(_Strict):
    """One published serving measurement. ``value`` is in the metric's SI unit (s, or output tokens/s per chip)."""

    id: str
    model: str
    hardware: str
    chips: int = Field(gt=0)  # chips serving one model instance
    tp: int = Field(gt=0)
    # experts spread over ep ranks of each tp group (vLLM --enable-expert-parallel, TensorRT-LLM moe_expert_parallel):
    # core.layout.Layout(tp, ep, dp = chips/(tp·ep)); attention data-parallel over the ep ranks where attn_dp, else
    # attention split over all tp·ep ranks (vLLM TP + EP, TensorRT-LLM attention TP + MoE EP)
    ep: int = Field(default=1, gt=0)
    attn_dp: bool = False
    weight_dtype: str  # "checkpoint": the checkpoint's own quantization (e.g. gpt-oss: mxfp4 experts, bf16 attention)
    kv_dtype: str
    scenario: Scenario
    metric: Metric
    isl: int = Field(gt=0)  # input tokens per request
    osl: int = Field(gt=0)  # output tokens per request
    batch: int | None = Field(default=None, gt=0)  # static batch / decode batch
    concurrency: int | None = Field(default=None, gt=0)  # closed-loop clients
    request_rate: float | None = Field(default=None, gt=0)  # requests/s, Poisson
    max_batch: int | None = Field(default=None, gt=0)  # scheduler cap when published
    # the recipe's tokens per scheduler step (vLLM --max-num-batched-tokens, TensorRT-LLM --max_num_tokens, SGLang the
    # smaller of --chunked-prefill-size and --max-prefill-tokens); None: the engine profile's [scheduler] default
    max_num_tokens: int | None = Field(default=None, gt=0)
    # the engine's memory rule where the source states it: kv_free_fraction of the HBM free after weights and
    # activations (TensorRT-LLM's free_gpu_memory_fraction), or gpu_memory_utilization of the total for weights,
    # activations and KV (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static); neither: the engine's own
    # rule and default (catalog/engines [kv_cache]: TensorRT-LLM 0.9 free, vLLM 0.9 total, SGLang by TP: 0.88 at
    # TP1 down to 0.79 at TP16, its by_tp table). One at most, the one of the case's engine's rule (_memory_rule).
    kv_free_fraction: float | None = Field(default=None, gt=0, le=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    engine: str = "trtllm"  # the serving engine's profile: a catalog/engines/<engine>.toml
    engine_version: RunVersion = ""  # the version run ("": the engine file's): decides its overlap scheduler (catalog/engines [host])
    two_batch_overlap: bool = False  # the run enabled two-batch overlap of the MoE dispatch + combine
    moe_kernel: str | None = None  # the MoE grouped GEMM the source says the engine ran (catalog/engines [moe_kernel]
    #                                kernels), where it is not the engine's default
    scheduler_recv_interval: int | None = Field(default=None, gt=0)  # the recipe's SGLang --scheduler-recv-interval
    # the recipe's TensorRT-LLM delayed batching (batch_wait_timeout_iters, batch_wait_max_tokens_ratio; None: the
    # engine profile's, off): serving.batch_wait.batch_wait_steps
    batch_wait_timeout_iters: int | None = Field(default=None, ge=0)
    batch_wait_max_tokens_ratio: float | None = Field(default=None, ge=0, le=1)
    # whether the run launches its prompt-carrying passes from CUDA graphs: True where the recipe captures them
    # (TensorRT-LLM torch_compile_config.enable_piecewise_cuda_graph, SGLang --enable-piecewise-cuda-graph): no eager
    # launch time; False where it runs them eagerly whatever the engine file's version gate (a PyTorch-backend run
    # of a version before its default); None: the engine file's [prefill_launch] at the case's version
    prefill_cuda_graph: bool | None = None
    kv_batch: bool = False  # KV cache batch-sharded over the TP group beyond its KV heads (Pope et al. 2022 §3.3)
    protocol: Protocol = "steady"  # the benchmark tool that produced the figure (PROTOCOLS)
    prompts: int | None = Field(default=None, gt=0)  # timed prompts of the run where the source states them
    value: float = Field(gt=0)
    published: str  # the cell(s) as published
    split: Literal["train", "test"] | None = None  # explicit override of the declared split rule
    # "disagg": a prefill pool hands each request's KV to a decode pool (``prefill``, ``decode``; chips = their
    # sum), predicted by serving.disagg (validation/disagg_cases.py), never fitted
    mode: Literal["agg", "disagg"] = "agg"
    prefill: Pool | None = None
    decode: Pool | None = None

    @field_validator("engine")
    @classmethod
    def _engine(cls, v: str) -> str:
        from tokenomy.catalog import loader

        if v not in loader.engine_names():
            raise ValueError(f"engine {v!r}; allowed: {', '.join(loader.engine_names())}")
        return v

    @model_validator(mode="after")
    def _scenario_inputs(self) -> "ServingCase":
        need = {"static_batch": "batch", "prefill": "batch", "decode": "batch", "concurrency": "concurrency",
                "request_rate": "request_rate"}.get(self.scenario)
        if need and getattr(self, need) is None:
            raise ValueError(f"case {self.id}: scenario {self.scenario} needs '{need}'")
        if self.mode == "disagg":
            return self._disagg()
        if self.prefill is not None or self.decode is not None:
            raise ValueError(f"case {self.id}: prefill/decode pools need mode = 'disagg'")
        if self.chips % (self.tp * self.ep):
            raise ValueError(f"case {self.id}: chips must be a multiple of tp*ep")
        return self._memory_rule()

    def _memory_rule(self) -> "ServingCase":
        """kv_free_fraction (a share of the memory free after weights, TensorRT-LLM's free_gpu_memory_fraction) and
        gpu_memory_utilization (a share of the total, vLLM's and SGLang's) are two engines' rules: one at most, and
        only the one the case's engine applies (catalog/engines [kv_cache] fraction_of)."""
        from tokenomy.catalog import loader

        if self.kv_free_fraction is not None and self.gpu_memory_utilization is not None:
            raise ValueError(f"case {self.id}: kv_free_fraction and gpu_memory_utilization together; give the one "
                             "of the engine's rule (kv_free_fraction: trtllm; gpu_memory_utilization: vllm, sglang)")
        given = {"free": "gpu_memory_utilization", "total": "kv_free_fraction"}
        wrong = given[loader.engine_file(self.engine).kv_cache.fraction_of]
        if getattr(self, wrong) is not None:
            raise ValueError(f"case {self.id}: {wrong} is not engine {self.engine}'s memory rule (a share of the "
                             f"{loader.engine_file(self.engine).kv_cache.fraction_of} memory)")
        return self

    def _disagg(self) -> "ServingCase":
        if self.prefill is None or self.decode is None:
            raise ValueError(f"case {self.id}: mode 'disagg' needs both 'prefill' and 'decode' pools")
        if self.chips != self.prefill.chips + self.decode.chips:
            raise ValueError(f"case {self.id}: chips must be prefill.chips + decode.chips "
                             f"({self.prefill.chips} + {self.decode.chips})")
        if self.scenario not in ("concurrency", "request_rate"):
            raise ValueError(f"case {self.id}: a disaggregated case is a concurrency or request_rate run")
        return self


class TrainingCase(_Strict):
    """One published pre-training throughput; the metric is the step time GBS·seq / (tokens/s/chip · chips)."""

    id: str
    model: str
    hardware: str
    chips: int = Field(gt=0)
    precision: str
    global_batch: int = Field(gt=0)  # sequences per optimizer step
    micro_batch: int = Field(gt=0)
    seq_len: int = Field(gt=0)
    tp: int = Field(default=1, gt=0)
    pp: int = Field(default=1, gt=0)
    cp: int = Field(default=1, gt=0)
    vp: int = Field(default=1, gt=0)  # virtual pipeline stages per rank
    # the pipeline schedule when the source names one other than 1F1B / interleaved (which vp implies): DualPipe
    # (DeepSeek-V3 report §3.2.1) or a zero-bubble one (Qi et al. 2024; core/schedules.py): its bubble and memory;
    # DualPipe also hides the EP all-to-alls under the paired chunk
    schedule: Literal["1f1b", "interleaved", "dualpipe", "zb-h1", "zb-h2", "zb-v"] | None = None
    ep: int = Field(default=1, gt=0)
    fsdp: bool = False
    grad_accum: int = Field(default=1, gt=0)  # micro-batches per pipeline per step
    # activation recomputation the recipe turns on; modules: norms, MLA up-projections and SwiGLU (core/memory.py);
    # op: torchtitan's op-level selective checkpointing (core/op_sac.py)
    recompute: Literal["none", "selective", "modules", "op", "full"] = "none"
    # Megatron-Core's recompute_modules under recompute "selective" (core/recompute_modules.py; empty: core_attn)
    recompute_modules: list[RecomputeModule] = Field(default_factory=list)
    # the recipe's pipeline_model_parallel_layout (core/pp_layout.py; "" = even stages)
    pp_layout: str = ""
    tp_comm_overlap: bool = False  # TP collectives pipelined under the GEMMs (Megatron/TE --tp-comm-overlap)
    # EP all-to-alls of one micro-batch hidden under another's compute: Megatron-Core's combined 1F1B
    # (--overlap-moe-expert-parallel-comm, Megatron-Bridge moe_a2a_overlap), as DualPipe pairs its chunks
    ep_comm_overlap: bool = False
    moe_kernels: Literal["unfused", "fused"] = "unfused"  # fused grouped GEMM + full-iteration CUDA graphs
    # the recipe's token dispatcher (core/moe_host.py; "alltoall"/"deepep" wait for the host each MoE layer)
    moe_dispatcher: Literal["alltoall", "deepep", "hybridep", "token_drop"] = "hybridep"
    # the recipe's last layers kept in BF16 (Megatron-Core num_layers_at_end_in_bf16; core/training.bf16_tail)
    bf16_layers_at_end: int = Field(default=0, ge=0)
    # the core-attention kernel (core/attention_kernel.py): "fa2" for PyTorch SDPA's FlashAttention-2 (torchtitan)
    attention_kernel: Literal["fused", "fa2"] = "fused"
    # FP8 operand casts (core/fp8_casts.py): "tensorwise" for torchao Float8Linear's dynamic per-tensor scaling
    fp8_scaling: Literal["fused", "tensorwise"] = "fused"
    # the Adam moments' dtype: bf16 under Megatron's precision-aware optimizer (exp_avg_dtype, exp_avg_sq_dtype), which
    # Megatron-Bridge's DeepSeek-V3 recipe sets (the fp32 master copy stays): 4 + 2 + 2 B per parameter (core/memory.py)
    optimizer_dtype: Literal["fp32", "bf16"] = "fp32"
    # bytes per logit at the loss's peak (core/memory.TrainBytes.logit_bytes): 4 (fp32 logits), 10 for an unfused fp32
    # cross-entropy on bf16 logits
    logit_bytes: float = Field(default=4.0, gt=0)
    # layers whose activations the recipe offloads to host memory (Megatron-Bridge cpu_offloading_num_layers)
    offload_layers: int = Field(default=0, ge=0)
    tokens_per_s_per_chip: float = Field(gt=0)
    published: str
    split: Literal["train", "test"] | None = None

    @model_validator(mode="after")
    def _modules_need_selective(self):
        if self.recompute_modules and self.recompute != "selective":
            raise ValueError(f"recompute_modules: only with recompute 'selective', got {self.recompute!r}")
        return self

    @property
    def value(self) -> float:
        return self.global_batch * self.seq_len / (self.tokens_per_s_per_chip * self.chips)


class ValidationFile(_Strict):
    source: Source
    defaults: dict = Field(default_factory=dict)
    serving: list[ServingCase] = Field(default_factory=list)
    training: list[TrainingCase] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _apply_defaults(cls, data: dict) -> dict:
        d = dict(data.get("defaults", {}))
        out = dict(data)
        for kind in ("serving", "training"):
            out[kind] = [{**d, **row} for row in data.get(kind, [])]
        return out
