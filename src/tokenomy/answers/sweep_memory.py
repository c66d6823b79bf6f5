"""Keep a sweep's chunk-sized buffers in the process heap (glibc only).

A chunk's temporaries are a few MB each, above glibc's mmap threshold, so by default every one is mapped fresh,
page-faulted in (the kernel zeroes each page) and unmapped again when freed: on this 2-core box that was a quarter
of the full engine's time on a 3.1 M-point sweep. Raising the mmap threshold (64 MB) and the trim threshold (1 GB)
lets freed buffers be reused by the next chunk instead (benchmarks/sweep.py: ~16 -> ~21 M configurations/s; peak
RSS unchanged, 0.42 GB, since the chunks are fixed-size). Process-wide and once per process: what glibc's own
MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ environment variables would set at start-up. Elsewhere (macOS,
musl, Windows) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h> parameter numbers
MMAP_THRESHOLD_BYTES = 64 << 20
TRIM_THRESHOLD_BYTES = 1 << 30
_done = False


def keep_chunk_buffers() -> bool:
    """Set the two thresholds once (True where glibc took them)."""
    global _done
    if _done:
        return True
    _done = True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD,
                                                                                   TRIM_THRESHOLD_BYTES))
