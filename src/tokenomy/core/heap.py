"""Keep freed grid-sized arrays in the process heap, so the next temporary does not page-fault its way in.

The engine evaluates its formulas as whole-array numpy expressions, whose temporaries are hundreds of KB to a few
MB each: a 32k-point serving piece with three prefill loads makes 768 KiB arrays by the hundred per call, a sweep
chunk arrays of several MB. glibc's malloc serves blocks above its mmap threshold (128 KiB at start, raised on each
free up to 32 MiB) with fresh mappings, unmapped when freed, and trims the heap's top back to the kernel once 2x
that is free; either way each new temporary is zero pages that fault on first write. Measured on this project's
2-core machine (same process, medians of 5): the analytic serving model 0.89 M workload points per CPU-s with
glibc's defaults, 1.5-1.6 M with the thresholds below (benchmarks/serve.py prints both in one run); a 3.1 M-point
sweep ~16 -> ~21 M configurations/s (benchmarks/sweep.py), its peak RSS unchanged (0.42 GB: chunks are fixed-size).

``keep_freed_arrays`` raises the mmap threshold to 64 MiB and the trim threshold to 1 GiB (mallopt(3); what the
MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ environment variables would set at start-up), once per process:
freed blocks stay with the process for the next temporary. The engine calls it (``for_grid``) the first time it
times a grid of GRID_POINTS points or more, whose arrays pass glibc's initial 128 KiB threshold: a CLI answer of a
few points never loads ctypes (~5 ms of its start-up). Elsewhere than glibc (macOS, musl, Windows) nothing is done;
TOKENOMY_MALLOC=default leaves glibc's defaults (the benchmark's baseline).
"""

from __future__ import annotations

import os
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h> parameter numbers
MMAP_THRESHOLD_BYTES = 64 << 20
TRIM_THRESHOLD_BYTES = 1 << 30
GRID_POINTS = 1 << 14  # 16,384 float64s = 128 KiB, glibc's initial mmap threshold
_set: bool | None = None  # what the first call did (None: not called yet)


def for_grid(points: int) -> None:
    """keep_freed_arrays once a grid of ``points`` reaches GRID_POINTS (cheap to call on every pass)."""
    if _set is None and points >= GRID_POINTS:
        keep_freed_arrays()


def keep_freed_arrays() -> bool:
    """Set the two thresholds, once per process; True where glibc took them."""
    global _set
    if _set is None:
        _set = _mallopt()
    return _set


def _mallopt() -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("TOKENOMY_MALLOC") == "default":
        return False
    import ctypes  # here, not at import: only a process that times large grids pays for loading it

    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: the C library it runs on
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD,
                                                                                  TRIM_THRESHOLD_BYTES))
