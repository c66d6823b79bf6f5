"""Chip -> scale-up domain -> scale-out network, with bandwidth per direction and latency per level.

Two levels, read from the catalog (a chip's or a system's ``scale_up``/``scale_out`` links):
    scale-up   NVLink/NVSwitch node or rack (HGX 8, NVL72, NVL144) or a TPU ICI slice; ``domain_size`` chips
    scale-out  InfiniBand/RoCE/DCN between domains; unbounded
A group of ``g`` chips laid out with ``stride`` (the product of the plan's inner degrees) keeps
``g_in = clip(floor(domain/stride), 1, g)`` members inside one domain and spans ``ceil(g/g_in)`` domains.
A TPU slice may carry its ICI torus shape: a collective over a group that fills the first ``a`` axes uses
the 2·a links of those axes, i.e. a fraction a/ndim of the chip's summed ICI bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.catalog import loader
from tokenomy.specs import Chip


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


def _level(name: str, link, chips: float, fallback) -> Level:
    if link is None:
        return Level(name, chips, fallback.bytes_per_s, fallback.latency_s)
    return Level(name, chips, link.bytes_per_s_per_direction, link.latency_s, link.technology)


def topology(name: str, *, torus: tuple[int, ...] | None = None, domain_size: int | None = None) -> Topology:
    """The topology of a catalog chip or system. A system's own links override its chip's.

    ``torus`` (e.g. (4, 4, 4) for a TPU v4 64-chip slice) is a parameter: the catalog does not carry slice shapes.
    ``domain_size`` overrides the scale-up domain (e.g. to ask "what if the rack were 8 chips").
    """
    hw = loader.hardware(name)
    chip = hw.chip
    up_link = out_link = None
    if name.lower() in loader.system_names():
        s = loader.system_file(name.lower())
        up_link, out_link = s.scale_up, s.scale_out
    cf = loader.chip_file(chip.name)
    up_link, out_link = up_link or cf.scale_up, out_link or cf.scale_out
    dom = int(domain_size or (hw.scale_up_domain_size if hw.num_chips > 1 else chip.scale_up.domain_size))
    if dom <= 0:
        raise ValueError(f"domain_size must be a positive integer, got {dom}")
    shape = tuple(int(x) for x in (torus or ()))
    if shape and (any(x <= 0 for x in shape) or int(np.prod(shape)) != dom):
        raise ValueError(f"torus: {'x'.join(map(str, shape))} must multiply to the scale-up domain ({dom} chips)")
    return Topology(hw.name, chip, _level("scale-up", up_link, float(dom), chip.scale_up),
                    _level("scale-out", out_link, float("inf"), chip.scale_out), max(hw.num_chips, 1), shape)


def parse_torus(text: str | None) -> tuple[int, ...] | None:
    """'4x4x4' -> (4, 4, 4); None or '' -> None."""
    if not text:
        return None
    try:
        shape = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--torus: {text!r} is not a shape; use e.g. 4x4x4") from None
    if not shape or any(x <= 0 for x in shape):
        raise ValueError(f"--torus: {text!r} needs positive sizes, e.g. 4x4x4")
    return shape
