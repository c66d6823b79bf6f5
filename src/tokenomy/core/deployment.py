"""A deployment: one model on one hardware with a layout, dtypes and an efficiency set — the engine's input.

Pure (no file I/O): the answer layer resolves names to a ``ModelArch`` and a ``Hardware`` (which carries its
topology) and the calibrated efficiency set; every question then runs ``Deployment.run`` (core/engine.py).
Precision: the checkpoint's own quantization, or ``weight_dtype`` for dense and expert weights with embeddings and
LM head kept at >= 16 bits (quantized checkpoints keep them wide: ModelOpt, Quark, AQT). The matmuls run in the
fastest tensor-core dtype the chip has for the dense weights (units.COMPUTE_FALLBACK).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core import engine
from tokenomy.core.coeffs import ModelShape, shape_of
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.layout import Layout
from tokenomy.specs import Hardware, Topology
from tokenomy.units import SECONDS_PER_HOUR, dtype_bytes, is_narrow

WIDE_EMBED_BYTES = 2.0


def usd_per_token(step_s, tokens_per_step, chips, usd_per_chip_hour, scale=1.0):
    """$ per token = chips · $/chip-s · step_s / tokens per step (broadcasts; times ``scale``). The factors without
    the step are formed first, so a grid-sized step_s is multiplied once."""
    per_step = scale * np.asarray(chips, float) * np.asarray(usd_per_chip_hour, float) / SECONDS_PER_HOUR
    return per_step / np.asarray(tokens_per_step, float) * np.asarray(step_s, float)


def usd_per_mtok(step_s, tokens_per_step, chips, usd_per_chip_hour):
    """$ per million tokens (lecture L27: 72 chips · $2/h · 20 ms / 2,000 tokens = $0.40/M)."""
    return usd_per_token(step_s, tokens_per_step, chips, usd_per_chip_hour, scale=1e6)


@lru_cache(maxsize=64)
def _lowered(model: ModelArch) -> ModelShape:
    """shape_of once per model (the shape depends on the model alone, and lowering it, ~1.3 ms for DeepSeek-V3, is
    most of a small question's time); keyed on the model's value, so an edited model is lowered afresh."""
    return shape_of(model)


def _scalar_key(values: tuple):
    """A hashable key of ``values`` where each is a number, None, a string or a (name, such) pair, with each number's
    type (a 0-d array lowers to arrays, a float to floats); None where any is an array."""
    out = []
    for v in values:
        name, v = v if isinstance(v, tuple) else (None, v)
        if isinstance(v, np.ndarray):
            if v.ndim:
                return None
            v = ("0d", v.dtype.str, v.item())
        elif not (v is None or isinstance(v, (int, float, str, np.generic))):
            return None
        out.append((name, type(v).__name__, v))
    return tuple(out)


@dataclass(frozen=True)
class Deployment:
    model: ModelArch
    hardware: Hardware
    layout: Layout = field(default_factory=Layout)
    weight_dtype: str | None = None  # None: the checkpoint's own quantization
    kv_dtype: str = "bf16"
    eff: Efficiency = ROOFLINE
    topology: Topology | None = None  # a variant (torus, domain size); default: the hardware's own
    usd_per_chip_hour: float | None = None  # default: the catalog's rental price

    def __post_init__(self) -> None:
        dtype_bytes(self.kv_dtype)
        if self.weight_dtype is not None:
            dtype_bytes(self.weight_dtype)

    @cached_property
    def shape(self) -> ModelShape:
        return _lowered(self.model)

    @property
    def topo(self) -> Topology:
        t = self.topology or self.hardware.topology
        if t is None:
            raise ValueError(f"hardware {self.hardware.name}: no topology")
        return t

    @property
    def chips(self) -> int:
        return int(self.layout.chips)

    @property
    def price(self) -> float:
        """$ per chip-hour: the override, else the catalog's."""
        return self.hardware.usd_per_chip_hour if self.usd_per_chip_hour is None else float(self.usd_per_chip_hour)

    @property
    def compute(self) -> tuple[str, float]:
        """(compute dtype, peak FLOP/s per chip)."""
        return self.hardware.chip.flops_for(self.weight_dtype or self.model.quantization.dense)

    @property
    def precision(self) -> engine.Precision:
        c = self.shape.coeffs
        kv = dtype_bytes(self.kv_dtype)
        state = dtype_bytes(self.model.state_dtype)
        if self.weight_dtype is None:
            return engine.Precision.of(c.dense_w, c.embed_w, c.expert_w, kv, state)
        w = dtype_bytes(self.weight_dtype)
        return engine.Precision.of(w, max(w, WIDE_EMBED_BYTES), w, kv, state)

    @property
    def peaks(self) -> engine.Peaks:
        """Peak FLOP/s at the compute dtype, HBM bandwidth, and the HBM capacity a program can allocate (what the
        driver exposes where the catalog cites it: 85.5e9 B on an "80 GB" H100; else the datasheet figure)."""
        chip = self.hardware.chip
        dtype, flops_per_s = self.compute
        # q·k and p·v at the cache's dtype, never narrower than the weight GEMMs' (an FP8 cache beside BF16 weights
        # is widened in the kernel): the slower of the two peaks (Peaks)
        attn_dtype, attn_flops_per_s = min(chip.flops_for(self.kv_dtype), (dtype, flops_per_s), key=lambda d: d[1])
        return engine.Peaks(flops_per_s, chip.hbm_bytes_per_s, chip.exposed_hbm_bytes, is_narrow(dtype),
                            attn_flops_per_s, is_narrow(attn_dtype))

    def work(self, batch, context, len_pass=1, **kw) -> engine.Work:
        """engine.work of the pass engine.Pass(batch, context, len_pass, **kw) on this deployment."""
        return engine.work(self.shape, self.topo, self.layout, self.precision,
                           engine.Pass(batch, context, len_pass, **kw))

    def lower(self, context, len_pass=1, **kw) -> engine.Lowered:
        """The batch-free half of ``work`` (engine.lower): batch it with engine.batched. A pass at one context (every
        argument a number) is lowered once per deployment (``_lowerings``): serve's layout check, each candidate's
        KV capacity and its steady state lower the same pass on the same layout."""
        key = _scalar_key((context, len_pass, *sorted(kw.items())))
        done = self._lowerings.get(key) if key is not None else None
        if done is None:
            done = engine.lower(self.shape, self.topo, self.layout, self.precision,
                                engine.Pass(None, context, len_pass, **kw))
            if key is not None:
                self._lowerings[key] = done
        return done

    @cached_property
    def _lowerings(self) -> dict:
        """This deployment's passes lowered at one context each (``lower``), keyed by ``_scalar_key``."""
        return {}

    @cached_property
    def _copies(self) -> dict:
        """``with_``'s copies by their replaced fields (``with_``)."""
        return {}

    def run(self, batch, context, len_pass=1, *, eff: Efficiency | None = None, **kw) -> engine.PassTerms:
        """The pass (engine.evaluate) under this deployment's efficiency set, or ``eff``."""
        return engine.times(self.work(batch, context, len_pass, **kw), self.topo, self.peaks, eff or self.eff)

    def with_(self, **kw) -> "Deployment":
        """A copy with ``kw`` replaced. It shares the lowered model shape of every deployment of an equal model
        (``_lowered``), so serve's layout check and each candidate's copy lower the model once; a copy with the same
        hashable replacements is the same copy (``_copies``), so its passes are lowered once (``lower``)."""
        try:
            key = tuple(sorted(kw.items()))
            hash(key)
        except TypeError:  # an array among them (a search's layouts): a fresh copy
            return replace(self, **kw)
        if key not in self._copies:
            self._copies[key] = replace(self, **kw)
        return self._copies[key]

    def usd_per_mtok(self, r: engine.PassTerms):
        """$ per million tokens of a pass on this deployment: its chips at its price for the step, per token."""
        return usd_per_mtok(r.step_s, np.asarray(r.batch) * np.asarray(r.len_pass), r.chips, self.price)

    def label(self) -> str:
        return f"{self.model.name} on {self.chips} x {self.hardware.chip.name} ({self.layout.label()})"
