"""The catalog's hardware files: chips, systems (and what-if variants), storage tiers and KV tiering policies.

Every section that carries numbers also carries ``source`` (a URL, or ``"measured: ..."``, or ``"derived: <formula>
from <other fields>"``) and ``as_of`` (an ISO date). Values are plain SI floats: bytes, bytes/s, FLOP/s, seconds,
watts, USD."""

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
    tensor_cores_as: str = ""  # a catalog chip on another die of the same family whose tensor cores run this chip's
    # 16- and 8-bit GEMMs at the same dense rates with the same kernels (B300 and B200): the serving fit holds this
    # chip's GEMM terms (eta_max, rho, M_1/2) at that chip's die's (validation/calibrate_fit.GEMM_FIELDS)
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
