"""The catalog's money and power files: API prices (catalog/prices/), board power, facility and ownership
(catalog/power/)."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from tokenomy.catalog.schema.hardware import Sourced


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
