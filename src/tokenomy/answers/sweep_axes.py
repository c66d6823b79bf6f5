"""A sweep's axes: named lists of values, checked once, in one canonical order, cut into rectangular chunks.

Axes (each a scalar or a list; a list becomes a dimension of the result, a scalar a coordinate of length one):
    loop axes     model, hardware, weight_dtype, kv_dtype, efficiency, kind, chips  (one engine call per value;
                  serving sweeps also loop over tp, ep, pp, dp: a serving deployment has one layout)
    array axes    tp, ep, pp, dp, batch, context, len_pass (passes) | concurrency or rate, isl, osl (serving)
                  (broadcast inside one engine call)
The canonical order puts every loop axis before every array axis, so a chunk — a block of the grid with the axes
after its cut axis whole, ``blocks`` — holds few engine calls, each over many points. Chunks are numbered in C
order and are the same whether evaluated here or on a dask cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tokenomy.answers import inputs
from tokenomy.specs import Hardware
from tokenomy.units import CHECKPOINT, DTYPE_BYTES

CATEGORICAL = ("model", "hardware", "weight_dtype", "kv_dtype", "efficiency", "kind")
DEGREES = ("tp", "ep", "pp", "dp")
PASS_ORDER = CATEGORICAL + ("chips",) + DEGREES + ("batch", "context", "len_pass")
SERVE_ORDER = tuple(a for a in CATEGORICAL if a != "kind") + ("chips",) + DEGREES + ("concurrency", "rate", "isl",
                                                                                        "osl")
AXES = tuple(dict.fromkeys(PASS_ORDER + SERVE_ORDER))
SERVE_AXES = ("concurrency", "rate", "isl", "osl")
PASS_ONLY = ("kind", "batch", "context", "len_pass")
KINDS = ("decode", "prefill")
EFFICIENCIES = ("calibrated", "roofline")


@dataclass(frozen=True)
class Grid:
    """The checked axes in canonical order; ``scalar`` names the axes given as one value (squeezed at the end)."""

    names: tuple[str, ...]
    values: tuple[tuple, ...]
    scalar: frozenset = field(default_factory=frozenset)
    serving: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.values)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def axis(self, name: str) -> tuple | None:
        return self.values[self.names.index(name)] if name in self.names else None

    def loop_axes(self) -> int:
        """How many leading axes are looped over (one engine call each); the rest broadcast."""
        arrays = SERVE_AXES if self.serving else DEGREES + ("batch", "context", "len_pass")
        return sum(1 for n in self.names if n not in arrays)


def _label(v) -> str:
    """An axis value's name; a what-if Hardware's names its overrides, so it never shares a cache entry or a
    coordinate with the catalog entry it changes (answers/variants.py)."""
    if isinstance(v, Hardware):
        return v.label()
    return v if isinstance(v, str) else getattr(v, "name", str(v))


def _check(name: str, vals: list) -> tuple:
    if name in ("model", "hardware"):
        return tuple(v if not isinstance(v, str) else v.strip() for v in vals)
    if name == "kind":
        bad = [v for v in vals if v not in KINDS]
        if bad:
            raise ValueError(f"kind: {bad[0]!r}; allowed: {', '.join(KINDS)}")
        return tuple(vals)
    if name in ("weight_dtype", "kv_dtype"):
        vals = [CHECKPOINT if v is None else v for v in vals]
        allowed = tuple(DTYPE_BYTES) + ((CHECKPOINT,) if name == "weight_dtype" else ("auto",))  # auto: the engine's
        bad = [v for v in vals if v not in allowed]
        if bad:
            raise ValueError(f"{name}: {bad[0]!r} is not a dtype; allowed: {', '.join(allowed)}")
        return tuple(vals)
    if name == "efficiency":
        bad = [v for v in vals if not (v in EFFICIENCIES or hasattr(v, "gemm_fraction"))]
        if bad:
            raise ValueError(f"efficiency: {bad[0]!r}; allowed: {', '.join(EFFICIENCIES)}")
        return tuple(vals)
    return tuple(float(x) for x in inputs.numbers(name, vals))  # the one grammar and its bounds (answers/inputs)


def grid_of(axes: dict) -> Grid:
    """Check the axes (name -> scalar or list) and put them in canonical order. One line naming the field on error."""
    unknown = [n for n in axes if n not in AXES]
    if unknown:
        raise ValueError(f"{unknown[0]}: not a sweep axis; allowed: {', '.join(AXES)}")
    serving = any(axes.get(n) is not None for n in ("concurrency", "rate"))
    if axes.get("concurrency") is not None and axes.get("rate") is not None:
        raise ValueError("concurrency, rate: give one (users of a closed loop, or requests/s of an open loop)")
    for n in ("model", "hardware"):
        if axes.get(n) is None:
            raise ValueError(f"{n}: required; a catalog name or a list of them")
    order = SERVE_ORDER if serving else PASS_ORDER
    if serving:
        extra = [n for n in PASS_ONLY if axes.get(n) is not None]
        if extra:
            raise ValueError(f"{extra[0]}: not an axis of a serving sweep (concurrency or rate, isl, osl)")
    else:
        extra = [n for n in ("isl", "osl") if axes.get(n) is not None]
        if extra:
            raise ValueError(f"{extra[0]}: a serving axis; give concurrency or rate with it")
    names, values, scalar = [], [], set()
    for n in order:
        v = axes.get(n)
        if v is None:
            continue
        one = isinstance(v, (str, int, float)) or not hasattr(v, "__len__") and not hasattr(v, "__iter__")
        vals = [v] if one else list(v)
        if not vals:
            raise ValueError(f"{n}: empty; give at least one value")
        checked = _check(n, vals)
        one = one and len(checked) == 1  # '1..4096' is one text, many values
        if len({_label(x) for x in checked}) != len(checked):
            raise ValueError(f"{n}: repeated values in {[_label(x) for x in checked]!r}")
        names.append(n)
        values.append(checked)
        if one:
            scalar.add(n)
    return Grid(tuple(names), tuple(values), frozenset(scalar), serving)


def labels(grid: Grid, name: str) -> list:
    """An axis's coordinate values: names for models, hardware and efficiency sets, numbers otherwise."""
    vals = grid.axis(name)
    if name in CATEGORICAL:
        return [_label(v) for v in vals]
    return [int(v) for v in vals] if inputs.FIELDS[name].whole else list(vals)


def blocks(shape: tuple[int, ...], budget: int, first_array: int | None = None) -> list[tuple[slice, ...]]:
    """Rectangular chunks of at most ``budget`` points (at least one row of the last axis), in C order: the trailing
    axes whose product fits stay whole, the axis before them is cut into runs, the axes before that take one index."""
    budget = max(int(budget), 1)
    j, inner = len(shape), 1
    while j > 0 and inner * shape[j - 1] <= budget:
        inner *= shape[j - 1]
        j -= 1
    if j == 0:
        return [tuple(slice(0, n) for n in shape)]
    step = max(1, budget // inner)
    out = []
    for outer in np.ndindex(*shape[:j - 1]):
        for k in range(0, shape[j - 1], step):
            out.append(tuple(slice(i, i + 1) for i in outer) + (slice(k, min(k + step, shape[j - 1])),)
                       + tuple(slice(0, n) for n in shape[j:]))
    return out
