"""Constants and dtype widths. The library works in plain SI floats; formatting lives at the edges.

Units convention (DESIGN.md): bytes, bytes/s, FLOP/s (a multiply-add is 2 FLOPs), seconds, USD.
"""

from __future__ import annotations

KB, MB, GB, TB, PB = 1e3, 1e6, 1e9, 1e12, 1e15
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0

# Bytes per element. mxfp4 stores 4-bit values with one 8-bit scale per 32 elements
# (OCP Microscaling spec v1.0): (32*4 + 8) / 32 / 8 = 0.53125 bytes.
CHECKPOINT = "checkpoint"  # a weight_dtype meaning the checkpoint's own (possibly mixed) quantization

DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp6": 0.75,
    "fp4": 0.5,
    "int4": 0.5,
    "mxfp4": 0.53125,
    "nvfp4": 0.5625,  # NVFP4: e2m1 values with one e4m3 scale per 16 elements: (16*4 + 8)/16/8 (NVIDIA ModelOpt)
}



def is_narrow(compute_dtype: str) -> bool:
    """A tensor-core dtype of 8 bits or fewer (fp8, int8, fp6, fp4): its GEMMs reach a different share of its peak
    than 16-bit ones (core.efficiency.Efficiency.at_compute)."""
    return DTYPE_BYTES[compute_dtype] <= 1.0


# The tensor-core dtypes a weight dtype can multiply in. A chip runs the fastest of them that it has: fp8 weights on
# an A100 (no fp8 units) run bf16 math at 312 TF, never its int8 624 TOPS (int8 units cannot do fp8 arithmetic);
# int8 weights on a B300 (int8 cut to ~0.15 PF) run fp8 or bf16. fp4/int4 weights dequantize to a wider dtype
# (W4A8 / W4A16 kernels), never to each other's units.
COMPUTE_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp32": ("fp32", "tf32", "bf16"),
    "tf32": ("tf32", "bf16"),
    "bf16": ("bf16", "fp16"),
    "fp16": ("fp16", "bf16"),
    "fp8": ("fp8", "bf16"),
    "int8": ("int8", "fp8", "bf16"),
    "fp6": ("fp6", "fp8", "bf16"),
    "fp4": ("fp4", "fp8", "bf16"),
    "int4": ("int4", "int8", "fp8", "bf16"),
    "mxfp4": ("fp4", "fp8", "bf16"),
    "nvfp4": ("fp4", "fp8", "bf16"),
}


# The engine's dimensional literals, plain SI floats like everything else: one token (a position's step, the unit a
# count of tokens moves by: C − S + 1 positions) and one second. tests/dims gives them units (pint quantities), as
# it gives efficiency.FLOPS_PER_WEIGHT its unit, so that each formula is checked; the engine reads them as
# ``units.TOKEN`` / ``units.SECOND`` and has no branch for quantities.
TOKEN = 1.0
SECOND = 1.0
ELEMENT = 1.0  # one element of a GEMM's contraction depth (Efficiency.gemm_half_depth)


def floats(x):
    """``x`` as float64 values (an array, or a numpy scalar): x·1.0 through numpy's ufunc, so a list or an int array
    becomes floats and a quantity that implements numpy's ufunc protocol (pint's, in tests/dims) keeps its units.
    (numpy loads here: importing the constants stays cheap for the CLI's --help.)"""
    import numpy as np

    return np.multiply(x, 1.0, dtype=np.float64)


def dtype_bytes(name: str) -> float:
    """Bytes per element of a dtype name; raises ValueError naming the allowed values."""
    try:
        return DTYPE_BYTES[name]
    except KeyError:
        allowed = ", ".join(DTYPE_BYTES)
        raise ValueError(f"unknown dtype {name!r}; allowed: {allowed}") from None


def fmt_bytes(n: float) -> str:
    """Decimal bytes for humans: 327680 -> '327.7 kB'."""
    for unit, scale in (("PB", PB), ("TB", TB), ("GB", GB), ("MB", MB), ("kB", KB)):
        if abs(n) >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.4g} B"


def fmt_seconds(s: float) -> str:
    if s != s:  # NaN
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s:.3g} s"


def fmt_si(x: float, unit: str = "") -> str:
    """Engineering notation: 1.5e12 -> '1.5 T'."""
    if x != x:
        return "-"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}".rstrip()
