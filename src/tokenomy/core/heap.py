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
MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ environment variables would set at start-up), once per process, at
the engine's import: freed blocks stay with the process for the next temporary. Elsewhere than glibc (macOS, musl,
Windows) nothing is done; TOKENOMY_MALLOC=default leaves glibc's defaults (the benchmark's baseline).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h> parameter numbers
MMAP_THRESHOLD_BYTES = 64 << 20
TRIM_THRESHOLD_BYTES = 1 << 30
_set: bool | None = None  # what the first call did (None: not called yet)


def keep_freed_arrays() -> bool:
    """Set the two thresholds, once per process; True where glibc took them."""
    global _set
    if _set is None:
        _set = _mallopt()
    return _set


def _mallopt() -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("TOKENOMY_MALLOC") == "default":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD,
                                                                                  TRIM_THRESHOLD_BYTES))
