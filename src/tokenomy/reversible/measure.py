"""Two independent counts of activation memory: saved tensors, and allocator peak.

1. ``SavedTensorBytes``: every tensor autograd saves for backward passes through
   ``torch.autograd.graph.saved_tensors_hooks``; we sum the bytes of the distinct
   storages, leaving out given tensors (parameters are weights, not activations).
2. ``peak_allocated_bytes``: the profiler's allocation trace (``profile_memory=True``)
   lists every allocation (+bytes) and free (-bytes) with a timestamp; the running sum
   ordered by time, maximised, is the peak growth over the level at entry:

       peak = max_t  sum_{events e, t_e <= t} nbytes_e          (per device type)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
from torch.profiler import ProfilerActivity, profile


@dataclass
class SavedTensorBytes:
    """Context manager summing distinct storages saved for backward (``.nbytes``)."""

    exclude: Iterable[torch.Tensor] = ()
    nbytes: int = 0
    count: int = 0
    _seen: set = field(default_factory=set)

    def __enter__(self) -> "SavedTensorBytes":
        self._skip = {t.untyped_storage().data_ptr() for t in self.exclude}
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        key = (storage.data_ptr(), t.device)
        if storage.data_ptr() not in self._skip and key not in self._seen:
            self._seen.add(key)
            self.nbytes += storage.nbytes()
            self.count += 1
        return t


def allocation_events(prof: profile, device_type: str = "cpu") -> list[tuple[int, int]]:
    """(time_ns, nbytes) of every allocation (+) and free (-) on ``device_type``."""
    wanted = getattr(torch.autograd.DeviceType, device_type.upper())
    events = [
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == wanted
    ]
    events.sort()
    return events


def peak_from_events(events: Iterable[tuple[int, int]]) -> int:
    """max over time of the running sum of allocation sizes (>= 0: the entry level)."""
    running = peak = 0
    for _, nbytes in events:
        running += nbytes
        peak = max(peak, running)
    return peak


def peak_allocated_bytes(fn: Callable[[], object], device_type: str = "cpu") -> int:
    """Peak bytes allocated on top of what was live when ``fn`` started."""
    activities = [ProfilerActivity.CPU]
    if device_type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, profile_memory=True) as prof:
        fn()
    return peak_from_events(allocation_events(prof, device_type))
