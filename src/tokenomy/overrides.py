"""What-if fields of a Hardware (``Hardware.with_`` and every door's ``--set``): the public fields a user may set
(``OVERRIDABLE``, SI units in the name), a value as given (absolute, or ``xN`` a multiplier of the catalog's), how
each lands on the chip or its links, and the ``Override`` record a changed Hardware carries beside its name."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

C = TypeVar("C")  # specs.Chip (this module sits below specs: it takes the chip and topology it is handed)
T = TypeVar("T")  # specs.Topology


@dataclass(frozen=True)
class Override:
    """One what-if field of a Hardware: the catalog's value (None: the chip had none) and the one used instead."""

    field: str
    base: float | None
    value: float
    source: str

    def describe(self) -> str:
        was = "none" if self.base is None else f"{self.base:.4g}"
        times = "" if not self.base else f", x{self.value / self.base:.3g}"
        return f"{self.field} {was} -> {self.value:.4g}{times}"

    def as_dict(self) -> dict:
        return {"field": self.field, "base": self.base, "value": self.value,
                "factor": None if not self.base else self.value / self.base, "source": self.source}


FLOPS_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4", "int4")  # catalog/schema.py's Flops
OVERRIDABLE = {  # public field -> what it is (SI units in the name); Hardware.with_ and every door's --set
    "hbm_bytes_per_s": "HBM bandwidth per chip", "hbm_bytes": "HBM capacity per chip (datasheet)",
    "peak_flops_per_s": "every dtype's dense peak at once (a multiplier only)",
    **{f"{d}_flops_per_s": f"dense {d} peak per chip" for d in FLOPS_DTYPES},
    "scale_up_bytes_per_s": "scale-up link per chip per direction", "scale_up_latency_s": "scale-up latency",
    "scale_out_bytes_per_s": "scale-out link per chip per direction", "scale_out_latency_s": "scale-out latency",
    "usd_per_chip_hour": "rental price", "tdp_w": "power per chip",
}


def _field(key: str) -> None:
    if key not in OVERRIDABLE:
        raise ValueError(f"{key}: not a hardware field; allowed: {', '.join(OVERRIDABLE)}")


def _positive(key: str, v) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{key}: {v!r} is not a number (SI units) or a multiplier such as x2") from None
    if not (x > 0 and x < float("inf")):
        raise ValueError(f"{key}: must be a finite number > 0, got {v!r}")
    return x


def _factor(key: str, v) -> float | None:
    """The multiplier of a relative value ('x2', 'x0.5'), else None (an absolute value)."""
    if not (isinstance(v, str) and v.strip().lower().startswith("x")):
        return None
    try:
        return _positive(key, v.strip()[1:])
    except ValueError:
        raise ValueError(f"{key}: a multiplier must be x followed by a finite number > 0, got {v!r}") from None


def _apply(c: C, key: str, v: float) -> C:
    if key.endswith("_flops_per_s"):
        return replace(c, peak_flops_per_s={**c.peak_flops_per_s, key.removesuffix("_flops_per_s"): v})
    if key == "hbm_bytes":
        dev = None if c.device_hbm_bytes is None else c.device_hbm_bytes * v / c.hbm_bytes
        return replace(c, hbm_bytes=v, device_hbm_bytes=dev)
    for prefix in ("scale_up", "scale_out"):
        if key.startswith(prefix + "_"):
            return replace(c, **{prefix: replace(getattr(c, prefix), **{key.removeprefix(prefix + "_"): v})})
    attr = {"usd_per_chip_hour": "usd_per_hour"}.get(key, key)
    return replace(c, **{attr: v})


def _apply_links(t: T, key: str, v: float) -> T:
    for prefix in ("scale_up", "scale_out"):
        if key.startswith(prefix + "_"):
            return replace(t, **{prefix: replace(getattr(t, prefix), **{key.removeprefix(prefix + "_"): v})})
    return t
