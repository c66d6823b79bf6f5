"""What is served, as a request object: the model, the hardware, the chips, the layout, the dtypes, the efficiency
set and the prices, and for disaggregated serving its two pools (answers/requests.py has the workload, the engine
and the run beside it). Built by ``of(model, hardware, values)`` from a door's keywords; each mode takes its own
layout keywords only (the other's would go unused): a ValueError names the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from tokenomy.answers import inputs
from tokenomy.core.layout import Layout

MODES = ("agg", "disagg")
POOL_DEGREES = ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch")  # layout_of's, in its order


@dataclass(frozen=True)
class PoolRequest:
    """One disaggregated pool: its chips and layout degrees (None: the best for its load, answers/pools.py)."""

    name: str  # prefill | decode
    chips: int | None = None
    layout: Layout | None = None

    @classmethod
    def of(cls, name: str, values: Mapping) -> "PoolRequest":
        """From ``{name}_chips`` and ``{name}_tp``, ... (answers.resolve.layout_of's degrees)."""
        from tokenomy.answers.resolve import layout_of

        return cls(name, inputs.optional(f"{name}_chips", values.get(f"{name}_chips")),
                   layout_of(*(values.get(f"{name}_{k}") for k in POOL_DEGREES)))

    def __str__(self) -> str:
        return f"{self.name} {self.chips} chips ({self.layout.label() if self.layout is not None else 'best'})"


@dataclass(frozen=True)
class DeploymentRequest:
    """What is served, where and how: the model and hardware (names, paths or specs), the chips (None: all of the
    hardware), the layout (None: chosen for the workload), weight and KV dtypes (KV "auto": the engine's for the
    weights), the efficiency set, $/chip-hour, energy prices; ``mode`` agg or disagg with its two pools."""

    model: Any
    hardware: Any
    chips: int | None = None
    layout: Layout | str | None = None  # "ideal": the even split, a bound (decode, prefill and economics take it)
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    efficiency: Any = "calibrated"
    usd_per_chip_hour: float | None = None
    usd_per_kwh: float | None = None
    facility: str | None = None
    mode: str = "agg"
    prefill: PoolRequest | None = None
    decode: PoolRequest | None = None

    @classmethod
    def of(cls, model, hardware, values: Mapping) -> "DeploymentRequest":
        """From a door's keywords: chips, tp ... kv_batch (the aggregated layout) or layout, weight_dtype, kv_dtype,
        efficiency, usd_per_chip_hour, usd_per_kwh, facility, mode, pools (prefill_chips, prefill_tp, ...,
        decode_chips, ...). Each mode takes its own layout keywords only (the other's would go unused)."""
        from tokenomy.answers.resolve import layout_of

        v = dict(values)
        mode = v.get("mode", "agg")
        if mode not in MODES:
            raise ValueError(f"mode: {mode!r}; allowed: {', '.join(MODES)}")
        pools = dict(v.get("pools") or {})
        bad = set(pools) - {f"{p}_{k}" for p in ("prefill", "decode") for k in ("chips", *POOL_DEGREES)}
        if bad:
            raise ValueError(f"pools: unknown {', '.join(sorted(bad))}; allowed: prefill_/decode_ + chips, "
                             f"{', '.join(POOL_DEGREES)}")
        agg = {k: v.get(k) for k in ("chips", *POOL_DEGREES)}
        given = [k for k, x in pools.items() if x is not None]
        used = [k for k, x in agg.items() if x is not None]
        if mode == "agg" and given:
            raise ValueError(f"{given[0]}: a disaggregated pool's; only with mode disagg")
        if mode == "disagg" and used:
            raise ValueError(f"{used[0]}: the aggregated layout's; with mode disagg give each pool's (prefill_chips, "
                             f"prefill_{used[0]}, decode_chips, decode_{used[0]}, ...)")
        pre, dec = (PoolRequest.of(p, pools) if mode == "disagg" else None for p in ("prefill", "decode"))
        degrees, layout = layout_of(*(agg[k] for k in POOL_DEGREES)), v.get("layout")
        if degrees is not None and layout is not None:
            raise ValueError(f"layout: {layout!r} and layout degrees (tp, ep, pp, dp) exclude each other; give one")
        return cls(model, hardware, inputs.optional("chips", agg["chips"]), degrees or layout,
                   v.get("weight_dtype"), v.get("kv_dtype"),
                   v.get("efficiency", "calibrated"), v.get("usd_per_chip_hour"), v.get("usd_per_kwh"),
                   v.get("facility"), mode, pre, dec)

    def name(self, of: str) -> str:
        x = self.model if of == "model" else self.hardware
        return x if isinstance(x, str) else getattr(x, "name", str(x))

    def layout_label(self) -> str:
        if isinstance(self.layout, Layout):
            return self.layout.label()
        return "best" if self.layout is None else str(self.layout)

    def __str__(self) -> str:
        where = (f"{self.prefill} + {self.decode}" if self.mode == "disagg" else
                 f"{self.chips or 'all'} chips, layout {self.layout_label()}")
        dtypes = f"weights {self.weight_dtype or 'checkpoint'}, KV {self.kv_dtype or 'auto'}"
        eff = self.efficiency if isinstance(self.efficiency, str) else getattr(self.efficiency, "name", "given")
        return f"{self.name('model')} on {self.name('hardware')} ({self.mode}: {where}); {dtypes}; {eff} efficiency"
