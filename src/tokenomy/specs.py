"""Frozen hardware specs the engine consumes, built from validated catalog files."""

from __future__ import annotations

from dataclasses import dataclass

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

    def flops_for(self, dtype: str) -> tuple[str, float]:
        """Peak dense FLOP/s for a compute dtype, falling back to a wider one the chip has (fp4 -> fp8 -> bf16)."""
        for d in COMPUTE_FALLBACK.get(dtype, (dtype,)):
            if d in self.peak_flops_per_s:
                return d, self.peak_flops_per_s[d]
        raise ValueError(f"chip {self.name} has no FLOP/s figure for {dtype} or a fallback; "
                         f"it has: {', '.join(self.peak_flops_per_s)}")


@dataclass(frozen=True)
class Hardware:
    """What a --hardware name resolves to: a chip, how many of them, and how they are wired."""

    name: str
    chip: Chip
    num_chips: int  # chips in the named system (1 for a bare chip)
    scale_up_domain_size: int
    usd_per_chip_hour: float
    preliminary: bool = False

    @property
    def hbm_bytes(self) -> float:
        return self.chip.hbm_bytes

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.chip.hbm_bytes_per_s
