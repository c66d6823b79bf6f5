"""Frozen hardware specs the engine consumes, built from validated catalog files.

A ``Hardware`` carries its ``Topology`` (chip -> scale-up domain -> scale-out network, per-level bandwidth per
direction and latency), built once by the catalog loader: nothing below the catalog re-reads files by name.
A group of ``g`` chips laid out with ``stride`` (the product of the plan's inner degrees) keeps
``g_in = clip(floor(domain/stride), 1, g)`` members inside one domain and spans ``ceil(g/g_in)`` domains.
A TPU slice may carry its ICI torus shape: a collective over a group that fills the first ``a`` axes uses
the 2·a links of those axes, i.e. a fraction a/ndim of the chip's summed ICI bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

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
class Hardware:
    """What a --hardware name resolves to: a chip, how many of them, and how they are wired."""

    name: str
    chip: Chip
    num_chips: int  # chips in the named system (1 for a bare chip)
    scale_up_domain_size: int
    usd_per_chip_hour: float
    preliminary: bool = False
    topology: Topology | None = field(default=None, compare=False)

    @property
    def hbm_bytes(self) -> float:
        return self.chip.hbm_bytes

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.chip.hbm_bytes_per_s
