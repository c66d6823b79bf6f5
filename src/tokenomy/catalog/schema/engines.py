"""The catalog's serving-engine files: engine profiles (catalog/engines/), their flags and launch recipes
(catalog/engines/flags/), and the benchmark protocols (catalog/protocols/)."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from tokenomy.catalog.schema.engine_host import EngineHost, EngineRuntime, Version
from tokenomy.catalog.schema.hardware import Sourced
from tokenomy.catalog.versions import release
from tokenomy.core.engine_terms import EngineTerms


class EngineScheduler(Sourced):
    chunked_prefill: bool  # prefill split into chunks riding with decodes (else whole prompts, still in the budget)
    max_num_tokens: PositiveInt  # the scheduler's token budget per step (decode tokens + prefill tokens)
    max_batch: PositiveInt  # running-sequence cap
    # admission reserves a request's whole ISL + OSL of KV blocks (TensorRT-LLM's GUARANTEED_NO_EVICT capacity
    # policy: never preempts), else its prompt's, new blocks taken as decodes grow (vLLM, SGLang: preempt when none)
    reserve_output: bool = False
    # new requests received every r_recv-th decode step (SGLang --scheduler-recv-interval; 1: every step)
    recv_interval: PositiveInt = 1
    # a prompt chunk rides in the running batch's decode step (vLLM V1, TensorRT-LLM in-flight batching), else it
    # runs as a pass of its own while the decodes wait (SGLang without --enable-mixed-chunk)
    mixed_prefill: bool = True
    # TensorRT-LLM's delayed batching: new prompts held while others decode for up to this many iterations, or until
    # they and the decodes fill this share of max_num_tokens (batch_wait_timeout_iters, batch_wait_max_tokens_ratio;
    # both 0, off, by default; serving.batch_wait.batch_wait_steps)
    batch_wait_iters: int = Field(default=0, ge=0)
    batch_wait_tokens_ratio: float = Field(default=0.0, ge=0.0, le=1.0)


class EngineKv(Sourced):
    block_size: PositiveInt  # tokens per KV block (page)
    hbm_fraction: float = Field(gt=0, le=1)
    fraction_of: Literal["total", "free"]  # of total HBM (weights inside it) or of the HBM free after weights
    by_tp: dict[str, float] = {}  # the fraction by tensor-parallel degree where the engine sets it so ("8" = tp >= 8)


class EngineGraphs(Sourced):
    batch_sizes: list[PositiveInt]


class EngineAllReduce(Sourced):
    """The engine's tensor-parallel all-reduce: its custom in-domain kernels and when it gives way to NCCL."""

    implementation: str  # what it runs, in words
    custom_max_bytes: PositiveInt | None = None  # larger messages go to NCCL (None: the engine picks by size)
    world_sizes: list[PositiveInt] = []  # group sizes the custom kernels support (empty: any inside the domain)


class EngineKvDtype(Sourced):
    """The KV-cache dtype the engine picks when none is given ('auto'), by the checkpoint's weight dtype."""

    default: str  # any weight dtype not in by_weight
    by_weight: dict[str, str] = {}


class EngineOverlap(Sourced):
    """Communication the engine hides under compute by default: two-batch overlap of the MoE dispatch + combine; and,
    where it runs, what its dispatch/combine kernels take from the compute they overlap (core/engine.exposed_ep_s):
    the share of the SMs the normal (prefill) kernels hold, the share of their time the low-latency (decode) kernels
    hold every SM."""

    two_batch_overlap: bool = False
    sm_share_normal: float = Field(0.0, ge=0.0, lt=1.0)
    sm_share_low_latency: float = Field(0.0, ge=0.0, lt=1.0)


class EngineFrontend(Sourced):
    """The engine's API server before a request reaches the scheduler: the host seconds per prompt token it spends
    tokenizing (and processing) the prompt, on ``tokenizer_workers`` workers that take requests first come first
    served (serving/sim_sessions: a request's prefix lookup starts when its tokenization ends)."""

    tokenize_s_per_token: PositiveFloat
    tokenizer_workers: PositiveInt = 1


class EnginePrefillLaunch(Sourced):
    """How the engine launches a pass that carries prompt tokens: outside CUDA graphs (eagerly, every kernel from
    Python) at ``eager_s_per_kernel`` host seconds per kernel the layers launch (arch/kernels.py's count; the pass
    engine adds it to the host time of such a pass, core/times.eager_prompt_s), from version ``since`` on (None:
    every version; TensorRT-LLM's PyTorch backend, whose context iterations run outside its generation-only CUDA
    graphs, is its default flow from 1.0, the C++ engine runtime before it replays compiled engines). Absent: no
    figure is stated, and none is charged. A run that captures its prompt passes (piecewise CUDA graphs) states so
    per case (validation ServingCase.prefill_cuda_graph)."""

    eager_s_per_kernel: float = Field(ge=0.0)
    since: Version | None = None


class EngineMoeKernel(Sourced):
    """The grouped GEMMs the engine runs the routed experts of a decode step with, each as the tile of rows it pads
    every expert's tokens to (core/times.expert_rows_padded): ``kernels`` by name, ``default`` the one it runs unless
    a case names another (a validation case's moe_kernel); read by serving.engine_profile.EngineProfile."""

    default: str
    kernels: dict[str, float]

    @model_validator(mode="after")
    def _default_named(self):
        if self.default not in self.kernels:
            raise ValueError(f"default: {self.default!r} is not among kernels; allowed: {', '.join(self.kernels)}")
        if any(v < 0 for v in self.kernels.values()):
            raise ValueError("kernels: tile rows must be >= 0")
        return self


class EngineFile(BaseModel):
    """``catalog/engines/<name>.toml``: a serving engine's scheduler and KV-cache defaults, each from its docs or code."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    version: Version
    scheduler: EngineScheduler
    kv_cache: EngineKv
    cuda_graphs: EngineGraphs
    kv_dtype: EngineKvDtype
    all_reduce: EngineAllReduce
    host: EngineHost
    overlap: EngineOverlap
    frontend: EngineFrontend | None = None  # None: the prompt's host time is not modelled
    prefill_launch: EnginePrefillLaunch | None = None  # None: prompt passes charged no eager launch time
    moe_kernel: EngineMoeKernel | None = None  # None: no expert tile stated, no padding charged

    def version_run(self, version: str | None = None) -> str:
        """The engine version run: ``version``, or the file's own where none is given (None, or '': a source that
        does not state it). The one place of that rule; every ``*_at`` below takes its version through it."""
        return version or self.version

    def runtime_at(self, version: str | None = None) -> EngineRuntime | None:
        """The runtime ([host] runtimes) the engine runs at ``version`` (None: the file's)."""
        return self.host.runtime_at(self.version_run(version))

    def eager_prefill_at(self, version: str | None = None, gated: bool = True) -> float:
        """e of the engine at ``version`` (None: the file's): [prefill_launch] eager_s_per_kernel from its ``since``
        on, else 0 (``gated=False``: the figure whatever the version, for a run its source states was launched
        eagerly); 0 where the profile states none."""
        pl = self.prefill_launch
        if pl is None or (gated and pl.since is not None and
                          release(self.version_run(version)) < release(pl.since)):
            return 0.0
        return pl.eager_s_per_kernel

    def terms_at(self, version: str | None = None) -> EngineTerms:
        """What the engine at ``version`` (None: the file's) sets on an efficiency set (core/engine_terms.py): its
        host overlap from [host] overlap_since on, its two-batch overlap and its kernels' SM shares, its runtime's
        o_seq (0 where none is stated), e, whether prompt chunks share the decode step, and its default MoE
        kernel's tile (0 where none is stated)."""
        at, o, k = self.version_run(version), self.overlap, self.moe_kernel
        runtime = self.host.runtime_at(at)
        return EngineTerms(float(self.host.overlaps_at(at)), float(o.two_batch_overlap),
                           (o.sm_share_normal, o.sm_share_low_latency), 0.0 if runtime is None else runtime.sequence_s,
                           self.eager_prefill_at(at), float(self.scheduler.mixed_prefill),
                           0.0 if k is None else k.kernels[k.default])  # its default is one of its kernels


class EngineFlag(BaseModel):
    """One tokenomy setting as an engine takes it: a command-line flag (``name``), a key of its YAML config file
    (``key``, a dotted path), or both; ``format`` says what value it takes and ``values`` maps tokenomy's spelling
    (bf16, fp8) to the engine's (bfloat16, fp8_e4m3): a tokenomy value missing there is one the engine lacks."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None = Field(default=None, pattern=r"^-{1,2}[a-z][a-z0-9_-]*$")
    key: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_.]*$")
    format: Literal["int", "fraction", "flag", "bool", "choice", "json", "str"]
    choices: list[str] = []
    values: dict[str, str] = {}
    source: str = Field(min_length=4)

    @model_validator(mode="after")
    def _where(self):
        if self.name is None and self.key is None:
            raise ValueError("a setting needs a flag name or a config key")
        if (self.format == "choice") != bool(self.choices):
            raise ValueError("choices: given exactly when format is 'choice'")
        if any(v not in self.choices for v in self.values.values()):
            raise ValueError("values: every engine spelling must be one of choices")
        return self


class EngineRouter(BaseModel):
    """The process that fronts a disaggregated deployment's prefill and decode servers."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    launch: str
    note: str = ""
    source: str = Field(min_length=4)
    flags: dict[str, EngineFlag]


class EngineWorker(BaseModel):
    """An orchestrator's worker wrapping an engine: its launch module, model flag and prefill/decode role flag."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    launch: str
    model: str
    role: str
    config_flag: str | None = None
    source: str = Field(min_length=4)


class EngineFlagsFile(BaseModel):
    """``catalog/engines/flags/<engine>.toml``: each setting a plan fixes, as the engine's documented CLI (or
    config file) spells it at ``version`` (the engine profile's version), with the page or file it was read from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    engine: str
    version: Version
    launch: str
    model: str = ""  # the model's flag ('' = the positional argument)
    config_flag: str | None = None  # the flag that takes the YAML file of ``key`` settings
    source: str = Field(min_length=4)
    as_of: dt.date
    note: str = ""
    flags: dict[str, EngineFlag] = {}
    router: EngineRouter | None = None
    workers: dict[str, EngineWorker] = {}


class ProtocolLoad(Sourced):
    """How the tool issues requests: ``burst`` (request rate inf: every request due at t = 0, at most C in flight,
    each client's next sent when its last completes), ``poisson`` (gamma gaps of shape ``burstiness``, mean 1/λ),
    ``offline`` (every sample in one query at t = 0, no concurrency limit) or ``steady`` (no run: the steady state)."""

    arrivals: Literal["steady", "burst", "poisson", "offline"]
    prompts: int = Field(default=0, ge=0)  # the tool's default prompt count (0: none, steady)
    prompts_per_client: int = Field(default=0, ge=0)  # > 0: prompts = this x C (InferenceX: 10 x C)
    min_duration_s: float = Field(default=0.0, ge=0)  # > 0: a Poisson run lasts at least this long (MLPerf)
    warmup_requests: int = Field(default=0, ge=0)  # untimed requests before the timed run
    warmup_per_client: int = Field(default=0, ge=0)  # > 0: warm-up = this x C
    burstiness: float = Field(default=1.0, gt=0)  # gamma shape of the inter-arrival gaps (1: Poisson)


class ProtocolLengths(Sourced):
    """How the tool draws each request's input and output length from the nominal L and the range ratio r:
    fixed (L), vllm ([floor(L(1 − r)), ceil(L(1 + r))]), sglang (input [max(int(L·r), 1), L], output [int(L·r), L]),
    inferencex ([int(L·r), L]); integers uniform with both ends included."""

    draw: Literal["fixed", "vllm", "sglang", "inferencex"]
    range_ratio: float = Field(default=0.0, ge=0, le=1)
    ignore_eos: bool  # outputs run to their drawn length


class ProtocolMetrics(Sourced):
    """How the tool reduces its requests to the figures it prints."""

    ttft: Literal["mean", "median", "p50-index", "p99"]  # the headline TTFT over requests
    tpot: Literal["mean", "median", "p50-index", "p99"]
    tpot_definition: Literal["decode", "e2e"]  # (latency − TTFT)/(out − 1) per request, or latency/out (first in)
    throughput: Literal["span"]  # total output tokens / (last response − first request)


class ProtocolFile(BaseModel):
    """``catalog/protocols/<name>.toml``: how one benchmark tool issues and measures requests, read from its source
    at ``commit`` (``repository`` + ``paths``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    tool: str
    repository: str  # owner/name on GitHub ("" for the steady state: no tool)
    paths: list[str] = []
    commit: str = ""
    load: ProtocolLoad
    lengths: ProtocolLengths
    metrics: ProtocolMetrics
