"""Topology variants for a question: a TPU slice's torus shape, or a what-if scale-up domain size.

The topology itself (chip -> scale-up domain -> scale-out network) is ``tokenomy.specs.Topology``, carried by
every ``Hardware`` the catalog loader builds; this module only derives variants of it, reading no file.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tokenomy.specs import Hardware, Level, Topology

__all__ = ["Level", "Topology", "topology", "parse_torus"]


def topology(hw: Hardware, *, torus: tuple[int, ...] | None = None, domain_size: int | None = None) -> Topology:
    """``hw``'s topology, with a torus shape (e.g. (4, 4, 4) for a TPU v4 64-chip slice: the catalog does not carry
    slice shapes) and/or another scale-up domain size ("what if the rack were 8 chips")."""
    topo = hw.topology
    if topo is None:
        raise ValueError(f"hardware {hw.name}: no topology (build it with tokenomy.catalog.loader.hardware)")
    dom = int(domain_size or topo.domain_size)
    if dom <= 0:
        raise ValueError(f"domain_size must be a positive integer, got {dom}")
    shape = tuple(int(x) for x in (torus or ()))
    if shape and (any(x <= 0 for x in shape) or int(np.prod(shape)) != dom):
        raise ValueError(f"torus: {'x'.join(map(str, shape))} must multiply to the scale-up domain ({dom} chips)")
    if dom == topo.domain_size and not shape:
        return topo
    return replace(topo, scale_up=replace(topo.scale_up, chips=float(dom)), torus=shape)


def parse_torus(text: str | None) -> tuple[int, ...] | None:
    """'4x4x4' -> (4, 4, 4); None or '' -> None."""
    if not text:
        return None
    try:
        shape = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"torus: {text!r} is not a shape; use e.g. 4x4x4") from None
    if not shape or any(x <= 0 for x in shape):
        raise ValueError(f"torus: {text!r} needs positive sizes, e.g. 4x4x4")
    return shape
