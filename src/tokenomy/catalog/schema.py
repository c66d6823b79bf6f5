"""Pydantic schemas for the TOML catalog files (chips, systems, storage tiers, prices).

Every section that carries numbers also carries ``source`` (a URL, or ``"measured: ..."``,
or ``"derived: <formula> from <other fields>"``) and ``as_of`` (an ISO date). Values are plain
SI floats: bytes, bytes/s, FLOP/s, seconds, watts, USD.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4", "int4")


class Sourced(BaseModel):
    """A group of numbers that share one citation."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str = Field(min_length=4)
    as_of: dt.date
    note: str = ""


class Flops(Sourced):
    """Peak FLOP/s per dtype (a multiply-add counts 2 FLOPs). Dense unless the table says sparse."""

    fp32: PositiveFloat | None = None
    tf32: PositiveFloat | None = None
    bf16: PositiveFloat | None = None
    fp16: PositiveFloat | None = None
    fp8: PositiveFloat | None = None
    int8: PositiveFloat | None = None
    fp6: PositiveFloat | None = None
    fp4: PositiveFloat | None = None
    int4: PositiveFloat | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> "Flops":
        if not self.by_dtype():
            raise ValueError("needs at least one dtype with a FLOP/s figure")
        return self

    def by_dtype(self) -> dict[str, float]:
        return {d: getattr(self, d) for d in DTYPES if getattr(self, d) is not None}


class Hbm(Sourced):
    """On-package memory. ``bytes`` is the capacity the engine uses (the usable figure where the vendor
    states one); ``datasheet_bytes`` is the vendor's headline figure and ``device_bytes`` what the driver
    reports (e.g. nvidia-smi's MiB total x 2**20), each kept when it differs from ``bytes``."""

    bytes: PositiveFloat
    bytes_per_s: PositiveFloat
    datasheet_bytes: PositiveFloat | None = None
    device_bytes: PositiveFloat | None = None


class Link(Sourced):
    """One level of interconnect as seen from one chip: bytes/s per direction, and latency."""

    bytes_per_s_per_direction: PositiveFloat
    latency_s: PositiveFloat
    domain_size: PositiveInt = 1  # chips reachable at this bandwidth (scale-up only)
    technology: str = ""


class Power(Sourced):
    tdp_w: PositiveFloat


class Price(Sourced):
    usd_per_hour: PositiveFloat


class ChipFile(BaseModel):
    """``catalog/chips/<name>.toml``: one accelerator."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    display_name: str
    aliases: tuple[str, ...] = ()  # other names it answers to (h100 -> h100-sxm); loader.resolve
    vendor: str
    family: str = ""  # architecture generation (hopper, blackwell, cdna3, ...); "": the chip is its own family
    same_die_as: str = ""  # a catalog chip on the same silicon (an export variant with other links): its kernels,
    # hence its fitted efficiency terms, apply to this chip where it has none of its own
    kind: Literal["gpu", "tpu", "accelerator", "cpu"]
    preliminary: bool = False
    peak_flops_per_s: Flops
    sparse_flops_per_s: Flops | None = None
    hbm: Hbm
    scale_up: Link
    scale_out: Link
    power: Power
    price: Price


class SystemHost(Sourced):
    """A system's ``[host]`` table: what one node's CPU side offers a KV cache spilled out of HBM.

    ``dram_bytes`` and ``nvme_bytes`` are per node (``chips_per_node`` chips share them);
    ``dram_to_chip_bytes_per_s`` is ONE chip's read path from host DRAM, per direction (PCIe Gen5 x16 ~64e9,
    NVLink-C2C 450e9); ``nvme_read_bytes_per_s`` is the node's aggregate read rate of its local NVMe drives.
    """

    chips_per_node: PositiveInt
    dram_bytes: PositiveFloat
    dram_to_chip_bytes_per_s: PositiveFloat
    nvme_bytes: PositiveFloat
    nvme_read_bytes_per_s: PositiveFloat


class SystemFile(BaseModel):
    """``catalog/systems/<name>.toml``: chips wired into one scale-up domain (node, rack, slice)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    display_name: str
    aliases: tuple[str, ...] = ()  # other names it answers to (nvl72 -> gb200-nvl72)
    chip: str  # name of a file in catalog/chips
    num_chips: PositiveInt
    scale_up_domain_size: PositiveInt  # chips per scale-up domain in this system
    preliminary: bool = False
    source: str = Field(min_length=4)
    as_of: dt.date
    note: str = ""
    price: Price | None = None  # per chip-hour; defaults to the chip's price
    scale_up: Link | None = None  # overrides the chip's scale-up link inside this system
    scale_out: Link | None = None
    host: SystemHost | None = None  # host DRAM and local NVMe per node (KV tiers under load)

    @model_validator(mode="after")
    def _host_divides(self):
        if self.host is not None and self.num_chips % self.host.chips_per_node:
            raise ValueError(f"host.chips_per_node {self.host.chips_per_node} does not divide num_chips "
                             f"{self.num_chips}")
        return self


class WhatIfFile(BaseModel):
    """A partial chip or system (``--hardware my-chip.toml``): a catalog entry named by ``base`` with some of its
    fields set; every other key is a public hardware field (specs.OVERRIDABLE: ``hbm_bytes_per_s = 6.7e12``, or a
    multiplier ``hbm_bytes_per_s = "x2"``). Its ``source`` says what the numbers are: "what-if: ..."."""

    model_config = ConfigDict(extra="allow", frozen=True)
    base: str
    name: str | None = None  # default: the file's stem
    source: str = Field(pattern=r"^what-if: \S.{2,}")
    as_of: dt.date
    note: str = ""

    def fields(self) -> dict[str, float | str]:
        return dict(self.model_extra or {})


class HostLink(Sourced):
    """The link a tier's bytes cross to reach one GPU (PCIe, NVLink-C2C), per direction."""

    bytes_per_s_per_direction: PositiveFloat
    technology: str = ""


class StorageFile(BaseModel):
    """``catalog/storage/<name>.toml``: one device of a memory/storage tier that could hold a KV cache.

    ``usd_per_hour`` is the all-in rental (or amortised purchase) cost of one device; the $ per
    byte-hour is derived as ``usd_per_hour / capacity_bytes``. ``read_bytes_per_s`` is the device's own
    bandwidth; ``link``, where given, is the path into the GPU, and a GPU reads the tier at
    min(read_bytes_per_s, link.bytes_per_s_per_direction) (econ.kv_tiers).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    display_name: str
    tier: Literal["hbm", "ddr", "cxl", "local_flash", "network_flash", "hdd", "object"]
    capacity_bytes: PositiveFloat
    read_bytes_per_s: PositiveFloat
    latency_s: PositiveFloat
    usd_per_hour: PositiveFloat
    source: str = Field(min_length=4)
    as_of: dt.date
    price_source: str = Field(min_length=4)
    note: str = ""
    link: HostLink | None = None
    hosts: list[str] = Field(default_factory=list)  # the chips whose host this tier is (empty: any chip)


TIER_KEYS = ("hbm", "ddr", "cxl", "local_flash", "network_flash", "hdd", "object")  # = econ.kv_tiers.TIER_ORDER


class KvTieringFile(BaseModel):
    """``catalog/kv_tiering/<policy>.toml``: how a serving engine's tiered KV cache moves blocks (LMCache, SGLang
    HiCache, Dynamo KVBM, Mooncake). ``tiers``: the tiers it uses, fastest first, from TIER_KEYS (HBM first);
    ``chunk_tokens``: the unit it stores and looks up; ``store``: a block is copied down when written
    ("write-through") or only when HBM evicts it ("on-evict"); ``load``: a hit is read back layer by layer
    overlapped with the prefill's compute ("layerwise-overlapped") or wholly before the prefill starts
    ("before-prefill")."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    description: str
    engines: list[str] = Field(min_length=1)
    tiers: list[Literal["hbm", "ddr", "cxl", "local_flash", "network_flash", "hdd", "object"]] = Field(min_length=1)
    chunk_tokens: PositiveInt
    store: Literal["write-through", "on-evict"]
    load: Literal["layerwise-overlapped", "before-prefill"]
    source: str = Field(min_length=4)
    as_of: dt.date
    note: str = ""

    @model_validator(mode="after")
    def _tiers_ordered(self):
        order = [TIER_KEYS.index(t) for t in self.tiers]
        if self.tiers[0] != "hbm" or order != sorted(set(order)):
            raise ValueError(f"tiers {self.tiers} must start with 'hbm' and follow {list(TIER_KEYS)} without repeats")
        return self


class LongContextStep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    above_tokens: PositiveInt
    input_usd_per_mtok: PositiveFloat
    output_usd_per_mtok: PositiveFloat


class PromptCacheTerms(Sourced):
    """How long a provider keeps a cached prompt prefix readable at ``cache_read_usd_per_mtok`` and what holding it
    costs: ``ttl_s`` the lifetime after the last use at the default setting (Anthropic 5 min, refreshed by each hit;
    OpenAI's in-memory cache 5-10 min of inactivity), ``ttl_max_s`` the longest the provider offers (a 1-hour write,
    24-hour extended retention), ``storage_usd_per_mtok_hour`` a separate storage fee (Gemini's explicit caches);
    None where the provider states none. ``write_surcharge``: whether writing the cache bills above the input price."""

    ttl_s: PositiveFloat | None = None
    ttl_max_s: PositiveFloat | None = None
    storage_usd_per_mtok_hour: PositiveFloat | None = None
    write_surcharge: bool


class ApiPriceFile(BaseModel):
    """``catalog/prices/<name>.toml``: one model's public API price sheet (USD per million tokens)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    provider: str
    model: str
    input_usd_per_mtok: PositiveFloat
    output_usd_per_mtok: PositiveFloat
    cache_write_5m_usd_per_mtok: PositiveFloat | None = None
    cache_write_1h_usd_per_mtok: PositiveFloat | None = None
    cache_read_usd_per_mtok: PositiveFloat | None = None
    long_context: list[LongContextStep] = []
    source: str = Field(min_length=4)
    as_of: dt.date
    note: str = ""
    cache: PromptCacheTerms | None = None  # the prompt cache's lifetime and storage fee ([cache] table)


class EngineScheduler(Sourced):
    chunked_prefill: bool  # prefill split into chunks riding with decodes (else whole prompts, still in the budget)
    max_num_tokens: PositiveInt  # the scheduler's token budget per step (decode tokens + prefill tokens)
    max_batch: PositiveInt  # running-sequence cap
    # admission reserves a request's whole ISL + OSL of KV blocks (TensorRT-LLM's GUARANTEED_NO_EVICT capacity
    # policy: never preempts), else its prompt's, new blocks taken as decodes grow (vLLM, SGLang: preempt when none)
    reserve_output: bool = False


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


class EngineHost(Sourced):
    """Whether the engine's scheduler runs its CPU work for step i + 1 while the GPU runs step i (an overlap or
    async scheduler), by version: on by default from ``overlap_since`` (None: opt-in only at every version)."""

    overlap_since: str | None = None  # the first version that turns it on by default


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


class EngineFile(BaseModel):
    """``catalog/engines/<name>.toml``: a serving engine's scheduler and KV-cache defaults, each from its docs or code."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    version: str
    scheduler: EngineScheduler
    kv_cache: EngineKv
    cuda_graphs: EngineGraphs
    kv_dtype: EngineKvDtype
    all_reduce: EngineAllReduce
    host: EngineHost
    overlap: EngineOverlap
    frontend: EngineFrontend | None = None  # None: the prompt's host time is not modelled


# ---- power and ownership (catalog/power/) --------------------------------------------------------------------


class Board(Sourced):
    """A chip's board power at rest: what it draws powered on with nothing to run (its TDP is in chips/)."""

    idle_w: PositiveFloat


class HostShare(Sourced):
    """Per chip, the IT power beside the accelerators of its reference system: host CPUs, memory, NICs, fans
    (``host_w``) and its share of the scale-out switches and optics (``network_w``), as provisioned."""

    system: str  # the reference system the share is taken from
    host_w: float = Field(ge=0)
    network_w: float = Field(ge=0)


class Capex(Sourced):
    """Capital cost per chip of its reference system (server or rack share and its networking)."""

    usd_per_chip: PositiveFloat
    estimate: bool = True  # a labelled estimate (no list price published)


class AllInReference(Sourced):
    """Another tool's all-in provisioned power per chip (InferenceX), kept beside ours for comparison."""

    w_per_chip: PositiveFloat


class PowerFile(BaseModel):
    """``catalog/power/<chip>.toml``: what a chip draws at rest, what its system adds, what it costs to own."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    chip: str  # name of a file in catalog/chips
    board: Board
    host: HostShare
    capex: Capex
    reference: AllInReference | None = None


class Pue(Sourced):
    pue: float = Field(ge=1.0, le=3.0)


class Electricity(Sourced):
    usd_per_kwh: PositiveFloat


class Ownership(Sourced):
    amortisation_years: PositiveFloat
    hosting_usd_per_kw_month: float = Field(ge=0)  # colocation: space, power delivery and cooling per kW provisioned


class PowerSplit(Sourced):
    """What each unit busy for a whole step adds to a board's idle power (econ/energy.py): compute and links as
    shares of its dynamic range (TDP − idle), the HBM path as joules per byte at the chip's bandwidth."""

    compute: float = Field(ge=0, le=2)
    hbm_j_per_byte: float = Field(gt=0, lt=1e-9)
    link: float = Field(ge=0, le=2)
    hbm_range: tuple[float, float]  # J/B where the fitted HBM energy is physical (validation/energy_cases.py)
    fitted_on: tuple[str, ...] = ()  # the sources whose measured power hbm_j_per_byte was fitted on


class FacilityFile(BaseModel):
    """``catalog/power/facility.toml``: facility overhead by deployment class, electricity, ownership, the split."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    default_class: str
    classes: dict[str, Pue]
    electricity: Electricity
    ownership: Ownership
    split: PowerSplit

    @model_validator(mode="after")
    def _default_known(self) -> "FacilityFile":
        if self.default_class not in self.classes:
            raise ValueError(f"default_class {self.default_class!r} is not one of {sorted(self.classes)}")
        return self


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
    version: str
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
    each client's next sent when its last completes), ``poisson`` (gamma gaps of shape ``burstiness``, mean 1/R),
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


# ---- validation of tiered KV caching and prefix-aware routing (catalog/validation/kv_tiering/) ------------------


class KvTierSource(BaseModel):
    """Where a published tiered-KV / routing measurement comes from and how it was taken."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=3)
    title: str
    url: str = Field(pattern=r"^https://")
    as_of: dt.date
    kind: Literal["blog", "benchmark report", "recipe", "repository", "paper"]
    engine: Literal["vllm", "sglang", "trtllm"]
    engine_version: str
    tool: str  # the client that issued and measured the requests (inference-perf, kv-cache-tester, aiperf, ...)
    how: str = Field(min_length=8)  # how the published figure is defined (means, percentiles, over which requests)


class KvTierWorkload(BaseModel):
    """The traffic of one case, as the source states it. ``single``: one request at a time whose prompt is cached
    (or not) in the tier named by the case; ``shared-prefix``: ``groups`` distinct prefixes of ``prefix_tokens``, each
    followed by ``unique_tokens`` (a per-request tail, or a per-user question repeated ``prompts_per_group`` ways);
    ``agentic-trace``: a replay of recorded multi-turn agent sessions (``trace`` names the corpus) by ``sessions``
    concurrent users with think time between turns."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["single", "shared-prefix", "agentic-trace"]
    prefix_tokens: PositiveInt | None = None  # the reusable prefix (single: the cached prompt length)
    unique_tokens: int = Field(default=0, ge=0)  # tokens after the prefix that differ per request
    output_tokens: PositiveInt | None = None
    groups: PositiveInt | None = None  # distinct prefixes
    prompts_per_group: PositiveInt | None = None  # distinct prompts per prefix (repeated as the run cycles)
    requests: PositiveInt | None = None  # timed requests
    concurrency: PositiveInt | None = None  # closed-loop clients (agentic-trace: the most concurrent sessions)
    request_rate: PositiveFloat | None = None  # open-loop requests/s (Poisson)
    duration_s: PositiveFloat | None = None  # length of the timed run (or stage)
    warmup_requests: int = Field(default=0, ge=0)  # untimed requests before it (seating the cache), open loop
    warmup_rate: PositiveFloat | None = None  # their requests/s
    trace: str = ""  # the recorded corpus an agentic-trace replays
    max_context_tokens: PositiveInt | None = None  # the replay's context cap
    max_ttft_s: PositiveFloat | None = None  # agentic-trace: the tester adds users while TTFT stays under this

    @model_validator(mode="after")
    def _needs(self):
        need = {"single": ("prefix_tokens",), "shared-prefix": ("prefix_tokens", "groups"),
                "agentic-trace": ("trace", "concurrency")}[self.kind]
        missing = [f for f in need if not getattr(self, f)]
        if missing:
            raise ValueError(f"a {self.kind} workload needs {', '.join(missing)}")
        return self


class KvTierCase(BaseModel):
    """One published figure. ``policy`` is what held the KV cache: "recompute" (no prefix cache), "hbm" (the
    engine's own prefix cache only) or a catalog/kv_tiering policy; ``hit_tier`` (single-request cases) the tier the
    measured request's prefix was read from ("none": a miss); ``routing`` how requests were spread over ``replicas``
    (llm-d's random / load-aware / approximate and precise prefix-cache-aware schedulers). Capacities are per replica:
    ``hbm_kv_tokens`` the engine's KV pool where the source states it, ``dram_bytes`` / ``nvme_bytes`` the offload
    tiers' sizes. Metrics: TTFT in seconds (mean or p50 as the source gives it), the token hit rate (cached prompt
    tokens / prompt tokens, 0..1), input or output tokens/s of the whole deployment."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=3)
    model: str
    hardware: str  # a catalog chip or system
    chips: PositiveInt  # chips per replica
    tp: PositiveInt
    replicas: PositiveInt = 1
    weight_dtype: str | None = None  # None: the checkpoint's own
    kv_dtype: str = "bf16"
    policy: str
    hit_tier: Literal["none", "hbm", "ddr", "local_flash", "network_flash"] | None = None
    routing: Literal["single", "random", "load", "prefix-approximate", "prefix-precise"] = "single"
    hbm_kv_tokens: PositiveInt | None = None
    dram_bytes: PositiveFloat | None = None
    nvme_bytes: PositiveFloat | None = None
    workload: KvTierWorkload
    metric: Literal["ttft_mean_s", "ttft_p50_s", "hit_rate", "input_tokens_per_s", "output_tokens_per_s"]
    value: PositiveFloat
    published: str  # the cell(s) as published

    @model_validator(mode="after")
    def _consistent(self):
        if self.chips % self.tp:
            raise ValueError(f"case {self.id}: chips {self.chips} is not a multiple of tp {self.tp}")
        if self.metric == "hit_rate" and self.value > 1:
            raise ValueError(f"case {self.id}: a hit rate is a fraction in (0, 1]")
        if (self.hit_tier is not None) != (self.workload.kind == "single"):
            raise ValueError(f"case {self.id}: hit_tier is given exactly for single-request workloads")
        if self.routing != "single" and self.replicas < 2:
            raise ValueError(f"case {self.id}: routing {self.routing} needs replicas >= 2")
        return self


class KvTierValidationFile(BaseModel):
    """``catalog/validation/kv_tiering/<source>.toml``: one source's cases, and what it published that is not used."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: KvTierSource
    case: tuple[KvTierCase, ...] = Field(min_length=1)
    skipped: tuple[dict[str, str], ...] = ()  # {what, why}


# ---- energy validation: measurements (catalog/validation/energy/) and vendors' claims (energy_claims/) -----------


class EnergySource(BaseModel):
    """Where a published energy measurement comes from, how it was measured and which energy ("board": the GPU
    boards alone, as NVML reports them; "all-in": the facility's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=3)
    url: str = Field(min_length=8)
    as_of: dt.date
    kind: Literal["measured", "claim"]
    engine: str
    energy: Literal["board", "all-in"]
    how: str = Field(min_length=8)
    workload: str = Field(min_length=8)


class EnergyCase(BaseModel):
    """One measured point: a closed loop of ``concurrency`` clients at ISL/OSL on ``tp`` chips, its J per output
    token (and the power of all GPUs and the output tokens/s, where the source gives them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=3)
    model: str
    hardware: str
    tp: PositiveInt
    concurrency: PositiveInt
    isl: PositiveInt
    osl: PositiveInt
    j_per_output_token: PositiveFloat
    weight_dtype: str | None = None
    power_w: PositiveFloat | None = None  # all GPUs, where the source gives it
    output_tokens_per_s: PositiveFloat | None = None


class EnergyCaseFile(BaseModel):
    """``catalog/validation/energy/<source>.toml``: one source's measured cases."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: EnergySource
    case: tuple[EnergyCase, ...]


class EnergyClaimSide(BaseModel):
    """One side of a claim: the hardware, the serving engine, the weights and the layouts tried."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    hardware: str
    engine: str
    weight_dtype: str | None = None
    layouts: tuple[dict, ...] = Field(min_length=1)


class EnergyClaim(BaseModel):
    """A vendor's ratio of tokens/s per MW, newer over older, on a model at ISL/OSL and interactivities; what was
    assumed, or ``unscored`` saying why it cannot be predicted."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=3)
    text: str = Field(min_length=8)
    ratio: PositiveFloat
    model: str | None = None
    isl: PositiveInt | None = None
    osl: PositiveInt | None = None
    interactivity: tuple[PositiveFloat, ...] = ()
    up_to: bool = False
    assumed: str = ""
    unscored: str = ""
    newer: EnergyClaimSide | None = None
    older: EnergyClaimSide | None = None


class EnergyClaimSource(BaseModel):
    """Who claimed it, where and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=3)
    vendor: str
    url: str = Field(min_length=8)
    as_of: dt.date
    kind: Literal["claim"]
    how: str = Field(min_length=8)


class EnergyClaimFile(BaseModel):
    """``catalog/validation/energy_claims/<source>.toml``: one source's claims."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: EnergyClaimSource
    claim: tuple[EnergyClaim, ...]
