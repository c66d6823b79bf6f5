"""Capture and replay of the state a recomputation must share with the forward pass.

A reversible backward pass runs F and G a second time. To rebuild the same values it
must see the same random numbers (dropout masks) and the same autocast policy (which
ops run in bfloat16) as the first run, whatever state the caller is in when it calls
``backward()``. Same idea as ``preserve_rng_state`` of ``torch.utils.checkpoint``
(activation checkpointing, Chen et al. 2016), written here for a per-block replay.

RNG: the CPU generator state (mt19937, 5056 bytes) and, for every accelerator device a
block's inputs live on, that device's generator state (Philox seed + offset, 16 bytes on
CUDA). A state is kept only when the function actually drew random numbers: the
generator state is compared before and after the call, so a deterministic F or G costs
no memory per block.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch


def _accelerator_module(device_type: str):
    """The ``torch.cuda``-like module for a device type (cuda, xpu, mps), or None."""
    if device_type == "cpu":
        return None
    try:
        module = torch.get_device_module(device_type)
    except (AttributeError, RuntimeError):  # unknown or unsupported device type
        return None
    return module if hasattr(module, "get_rng_state") else None


@dataclass(frozen=True)
class RngState:
    """Generator states: the CPU one and one per (device_type, index) accelerator."""

    cpu: torch.Tensor
    devices: tuple[tuple[torch.device, torch.Tensor], ...]

    @staticmethod
    def devices_of(tensors: Sequence[torch.Tensor]) -> tuple[torch.device, ...]:
        """Accelerator devices (not CPU) holding any of ``tensors``, in first-seen order."""
        seen: dict[torch.device, None] = {}
        for t in tensors:
            if t.device.type != "cpu" and _accelerator_module(t.device.type) is not None:
                seen[t.device] = None
        return tuple(seen)

    @classmethod
    def capture(cls, devices: Sequence[torch.device]) -> "RngState":
        """Read (copy) the current generator states of the CPU and ``devices``."""
        states = tuple((d, _accelerator_module(d.type).get_rng_state(d)) for d in devices)
        return cls(torch.get_rng_state(), states)

    def restore(self) -> None:
        """Make the generators continue exactly as they did after :meth:`capture`."""
        torch.set_rng_state(self.cpu)
        for device, state in self.devices:
            _accelerator_module(device.type).set_rng_state(state, device)

    def same_as(self, other: "RngState") -> bool:
        """True when no random number was drawn between the two captures."""
        if not torch.equal(self.cpu, other.cpu):
            return False
        return all(torch.equal(a[1], b[1]) for a, b in zip(self.devices, other.devices))


def used_state(before: RngState, after: RngState) -> RngState | None:
    """``before`` if a function drew random numbers between the captures, else None."""
    return None if before.same_as(after) else before


@contextlib.contextmanager
def forked_rng(devices: Sequence[torch.device], needed: bool) -> Iterator[None]:
    """Save the generators on entry and put them back on exit (a no-op when not needed).

    Inside, the caller may :meth:`RngState.restore` recorded states freely; the global
    random stream seen by the rest of the program is unchanged by the replay.
    """
    if not needed:
        yield
        return
    saved = RngState.capture(devices)
    try:
        yield
    finally:
        saved.restore()


@dataclass(frozen=True)
class AutocastState:
    """Autocast policy per device type: (device_type, enabled, dtype), and the cache flag."""

    per_device: tuple[tuple[str, bool, torch.dtype], ...]
    cache_enabled: bool

    @classmethod
    def capture(cls, device_types: Sequence[str]) -> "AutocastState":
        """Read the autocast state in force now for each device type."""
        per_device = tuple(
            (dt, torch.is_autocast_enabled(dt), torch.get_autocast_dtype(dt))
            for dt in dict.fromkeys(device_types)
        )
        return cls(per_device, torch.is_autocast_cache_enabled())

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        """Run the body under exactly the captured policy (enabled or disabled)."""
        with contextlib.ExitStack() as stack:
            for device_type, enabled, dtype in self.per_device:
                stack.enter_context(
                    torch.autocast(device_type, dtype=dtype, enabled=enabled,
                                   cache_enabled=self.cache_enabled)
                )
            yield


def device_types_of(tensors: Sequence[torch.Tensor]) -> tuple[str, ...]:
    """Device types whose autocast policy matters: always 'cpu', plus the inputs' types."""
    return tuple(dict.fromkeys(["cpu", *(t.device.type for t in tensors)]))
