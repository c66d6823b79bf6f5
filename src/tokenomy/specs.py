"""Frozen hardware specs the engine consumes, built from validated catalog files.

A ``Hardware`` carries its ``Topology`` (chip -> scale-up domain -> scale-out network, per-level bandwidth per
direction and latency), built once by the catalog loader: nothing below the catalog re-reads files by name.
A group of ``g`` chips laid out with ``stride`` (the product of the plan's inner degrees) keeps
``g_in = clip(floor(domain/stride), 1, g)`` members inside one domain and spans ``ceil(g/g_in)`` domains.
A TPU slice may carry its ICI torus shape: a collective over a group that fills the first ``a`` axes uses
the 2·a links of those axes, i.e. a fraction a/ndim of the chip's summed ICI bandwidth.
What a user may change on a Hardware (``with_``) is overrides.py, re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from tokenomy.overrides import (  # noqa: F401  (re-exported: callers write specs.OVERRIDABLE)
    FLOPS_DTYPES, OVERRIDABLE, Override, _apply, _apply_links, _factor, _field, _positive)
from tokenomy.units import COMPUTE_FALLBACK


@dataclass(frozen=True)
class LinkSpec:
    bytes_per_s: float  # per chip, per direction
    latency_s: float
    domain_size: int = 1


@dataclass(frozen=True)
class Chip:
    name: str
    display_name: str
    peak_flops_per_s: dict[str, float]  # dense, by dtype
    hbm_bytes: float
    hbm_bytes_per_s: float
    scale_up: LinkSpec
    scale_out: LinkSpec
    tdp_w: float
    usd_per_hour: float
    preliminary: bool = False
    device_hbm_bytes: float | None = None  # what the driver exposes (nvidia-smi total), when the catalog cites it

    @property
    def exposed_hbm_bytes(self) -> float:
        """The usable HBM per chip of every door (train, decode, serve; Deployment.peaks): what a program can
        allocate, the driver's figure where cited (85.52e9 B on an "80 GB" H100: cudaMemGetInfo's total, what the
        serving engines size their caches from and what a training job fills), else the datasheet's."""
        return self.device_hbm_bytes or self.hbm_bytes

    def flops_for(self, dtype: str) -> tuple[str, float]:
        """(compute dtype, peak dense FLOP/s) for weights of ``dtype``: the fastest of the tensor-core dtypes that
        can multiply them (units.COMPUTE_FALLBACK) that this chip has."""
        have = [(self.peak_flops_per_s[d], d) for d in COMPUTE_FALLBACK.get(dtype, (dtype,))
                if d in self.peak_flops_per_s]
        if not have:
            raise ValueError(f"chip {self.name} has no FLOP/s figure for {dtype} or a fallback; "
                             f"it has: {', '.join(self.peak_flops_per_s)}")
        peak, d = max(have, key=lambda x: x[0])  # the first of equal peaks: the weights' own dtype
        return d, peak


@dataclass(frozen=True)
class Level:
    """One level of interconnect as one chip sees it."""

    name: str  # "scale-up" | "scale-out"
    chips: float  # chips reachable at this level (inf for scale-out)
    bytes_per_s: float  # per chip, per direction
    latency_s: float  # per message (alpha)
    technology: str = ""


@dataclass(frozen=True)
class Topology:
    name: str
    chip: Chip
    scale_up: Level
    scale_out: Level
    num_chips: int  # chips in the named system (a bare chip: one scale-up domain)
    torus: tuple[int, ...] = ()  # ICI torus shape of a TPU slice; () = switched (every pair one hop)

    @property
    def domain_size(self) -> int:
        return int(self.scale_up.chips)

    @property
    def peer_to_peer(self) -> bool:
        """Every chip of the scale-up domain reads every other's memory in one hop (NVLink/NVSwitch, AMD's fully
        connected Infinity Fabric): what a one-shot or two-shot custom all-reduce needs. A TPU's ICI torus is not."""
        return not self.torus and "torus" not in self.scale_up.technology.lower()

    @property
    def scale_out_ratio(self) -> float:
        """Scale-up over scale-out bandwidth per chip: the lecture's "scale-out is ~8x slower", from the catalog."""
        return self.scale_up.bytes_per_s / self.scale_out.bytes_per_s

    @property
    def domain_hbm_bytes(self) -> float:
        """HBM capacity of one scale-up domain (lecture §2.7: 8 x 80 GB Hopper = 640 GB)."""
        return self.domain_size * self.chip.hbm_bytes

    @property
    def domain_hbm_bytes_per_s(self) -> float:
        return self.domain_size * self.chip.hbm_bytes_per_s

    def chips_in_domain(self, group, stride=1):
        """Members of a ``group`` laid out ``stride`` apart that share one scale-up domain."""
        g, s = np.asarray(group, dtype=float), np.asarray(stride, dtype=float)
        return np.clip(np.floor(self.domain_size / s), 1.0, g)

    def up_bytes_per_s(self, group_in):
        """Scale-up bandwidth a collective over ``group_in`` chips of one domain can use (torus: axes filled)."""
        if not self.torus:
            return np.broadcast_to(self.scale_up.bytes_per_s, np.shape(group_in)).astype(float)
        edges = np.cumprod(self.torus)[:-1]
        axes = 1.0 + np.sum(np.asarray(group_in, dtype=float)[..., None] > edges, axis=-1)
        return self.scale_up.bytes_per_s * axes / len(self.torus)

    def with_(self, **kw) -> "Topology":
        """A variant: e.g. ``topo.with_(scale_out=replace(topo.scale_out, latency_s=2.5e-3))``."""
        return replace(self, **kw)


@dataclass(frozen=True)
class Host:
    """One node's CPU side, as a KV cache spilled out of HBM sees it (catalog/systems/<name>.toml ``[host]``):
    DRAM and local NVMe per node, shared by ``chips_per_node`` chips; one chip reads DRAM at
    ``dram_to_chip_bytes_per_s`` per direction (PCIe or NVLink-C2C); the node reads its NVMe at
    ``nvme_read_bytes_per_s`` in all."""

    chips_per_node: int
    dram_bytes: float
    dram_to_chip_bytes_per_s: float
    nvme_bytes: float
    nvme_read_bytes_per_s: float
    source: str = ""


@dataclass(frozen=True)
class Hardware:
    """What a --hardware name resolves to: a chip, how many of them, and how they are wired."""

    name: str
    chip: Chip
    num_chips: int  # chips in the named system (1 for a bare chip)
    scale_up_domain_size: int
    usd_per_chip_hour: float
    preliminary: bool = False
    topology: Topology | None = field(default=None, compare=False)
    overrides: tuple[Override, ...] = ()  # what-if fields set on a catalog entry (with_), each with its base value
    host: Host | None = field(default=None, compare=False)  # host DRAM + NVMe per node; None: not in the catalog

    @property
    def hbm_bytes(self) -> float:
        return self.chip.hbm_bytes

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.chip.hbm_bytes_per_s

    def value(self, name: str) -> float | None:
        """The number a public field names (``OVERRIDABLE``) as the engine reads it; None: the chip has no such
        figure (a dtype it lacks)."""
        _field(name)
        c, topo = self.chip, self.topology
        if name.endswith("_flops_per_s") and name != "peak_flops_per_s":
            return c.peak_flops_per_s.get(name.removesuffix("_flops_per_s"))
        level = {"scale_up": topo.scale_up if topo else c.scale_up, "scale_out": topo.scale_out if topo else c.scale_out}
        for prefix, link in level.items():
            if name.startswith(prefix + "_"):
                return float(getattr(link, name.removeprefix(prefix + "_")))
        return {"hbm_bytes_per_s": c.hbm_bytes_per_s, "hbm_bytes": c.hbm_bytes, "tdp_w": c.tdp_w,
                "usd_per_chip_hour": self.usd_per_chip_hour, "peak_flops_per_s": None}[name]

    def with_(self, source: str = "what-if: set by hand", name: str | None = None, **fields) -> "Hardware":
        """A what-if variant: ``hw.with_(hbm_bytes_per_s=6.7e12)`` or ``hw.with_(hbm_bytes_per_s="x2")`` (a
        multiplier of the base value); fields are ``OVERRIDABLE``'s public names, each value > 0. The chip, its
        links and the topology the engine reads all change together, and ``overrides`` records each field's base and
        new value with ``source``; the chip keeps its name, so its calibrated efficiency terms (shares of the peaks)
        apply to the variant. ``hbm_bytes`` scales the driver-exposed capacity by the same ratio. A bad field or a
        value <= 0 raises ValueError naming the field and the allowed ones."""
        hw = self
        for key, v in fields.items():
            hw = hw._set(key, v, source)
        return replace(hw, name=name) if name else hw

    def _set(self, key: str, v, source: str) -> "Hardware":
        _field(key)
        factor, base = _factor(key, v), self.value(key)
        if key == "peak_flops_per_s":
            if factor is None:
                raise ValueError(f"peak_flops_per_s: takes a multiplier of every dtype's peak (e.g. x2), got {v!r}; "
                                 f"one dtype's figure: bf16_flops_per_s=...")
            hw = self
            for d in self.chip.peak_flops_per_s:
                hw = hw._set(f"{d}_flops_per_s", f"x{factor!r}", source)
            return hw
        if factor is not None and base is None:
            raise ValueError(f"{key}: {self.chip.name} has no figure to multiply; give a value in SI units")
        new = base * factor if factor is not None else _positive(key, v)
        chip, topo, usd = _apply(self.chip, key, new), self.topology, self.usd_per_chip_hour
        if topo is not None:
            topo = replace(_apply_links(topo, key, new), chip=chip)
        if key == "usd_per_chip_hour":
            usd = new
        first = next((o.base for o in self.overrides if o.field == key), base)
        kept = tuple(o for o in self.overrides if o.field != key)
        return replace(self, chip=chip, topology=topo, usd_per_chip_hour=usd,
                       overrides=kept + (Override(key, first, new, source),))

    def label(self) -> str:
        """The name, with its what-if fields where it has any: 'h100-sxm (what-if: hbm_bytes_per_s 3.35e12 ->
        6.7e12)'."""
        if not self.overrides:
            return self.name
        return f"{self.name} (what-if: {'; '.join(o.describe() for o in self.overrides)})"


@dataclass(frozen=True)
class PowerSpec:
    """What a chip draws and costs to own, from catalog/power (the chip's file and facility.toml): board power at
    rest and its limit, the IT power its reference system adds per chip, capital cost, and the facility's terms
    (PUE of the deployment class, electricity price, amortisation, hosting, the board-power split)."""

    chip: str
    idle_w: float
    tdp_w: float
    host_w: float  # host CPUs, memory, NICs, fans per chip (as provisioned)
    network_w: float  # scale-out switches and optics per chip
    capex_usd_per_chip: float
    capex_estimate: bool
    reference_w: float | None  # InferenceX's all-in provisioned W per chip, for comparison
    facility_class: str
    pue: float
    usd_per_kwh: float
    amortisation_years: float
    hosting_usd_per_kw_month: float
    hbm_bytes_per_s: float  # the chip's HBM bandwidth: what a busy HBM moves, at hbm_j_per_byte
    compute_share: float  # of (TDP - idle) a busy tensor core drives (econ/energy.py)
    hbm_j_per_byte: float  # J per byte a busy HBM path (DRAM, PHY, L2, the SMs' loads) spends
    link_share: float  # of (TDP - idle) busy links and their collective kernels drive
