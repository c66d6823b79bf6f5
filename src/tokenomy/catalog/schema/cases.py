"""The catalog's validation cases that live beside the hardware: tiered KV caching and prefix-aware routing
(catalog/validation/kv_tiering/), energy measurements (catalog/validation/energy/) and vendors' claims
(catalog/validation/energy_claims/)."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from tokenomy.catalog.schema.engine_host import RunVersion


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
    engine_version: RunVersion = ""  # '': not stated (the engine file's version is run)
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
    each_prompt_once: bool = False  # shared-prefix closed loop: every prompt sent once, shuffled (SGLang bench_serving)

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
    tokens / prompt tokens, 0..1), input or output tokens/s of the whole deployment; a ``_ratio`` metric is the
    source's change against its own ``baseline_policy`` arm on the same load (1 + the published change)."""

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
    metric: Literal["ttft_mean_s", "ttft_p50_s", "hit_rate", "input_tokens_per_s", "output_tokens_per_s",
                    "ttft_mean_ratio", "input_tokens_per_s_ratio"]
    baseline_policy: str | None = None  # a _ratio metric's other arm
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
        if self.metric.endswith("_ratio") != (self.baseline_policy is not None):
            raise ValueError(f"case {self.id}: baseline_policy is given exactly for a _ratio metric")
        return self


class KvTierValidationFile(BaseModel):
    """``catalog/validation/kv_tiering/<source>.toml``: one source's cases, what it published that is not used, and
    what its residuals point to. A source read whose figures cannot be cased (figures only, hardware or load not
    stated, a chip outside the catalog) has no case and says why in ``skipped``: the report counts it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: KvTierSource
    case: tuple[KvTierCase, ...] = ()
    skipped: tuple[dict[str, str], ...] = ()  # {what, why}
    residual: tuple[str, ...] = ()  # the mechanisms its remaining errors point to, each with its evidence

    @model_validator(mode="after")
    def _said(self):
        if not self.case and not self.skipped:
            raise ValueError(f"source {self.source.id}: no case and no skipped entry saying why")
        for k in self.skipped:
            if set(k) != {"what", "why"}:
                raise ValueError(f"source {self.source.id}: a skipped entry has the keys what and why, not {sorted(k)}")
        return self


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
