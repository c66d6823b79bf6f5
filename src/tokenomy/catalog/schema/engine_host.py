"""The host side of a serving engine's profile (catalog/engines/<name>.toml [host]): whether its scheduler overlaps the
GPU, and each runtime it has run by version with that runtime's host seconds per running sequence per step."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from tokenomy.catalog.schema.hardware import Sourced
from tokenomy.catalog.versions import release


def _version(v: str, info: ValidationInfo) -> str:
    """A version the engines can order (catalog/versions.release), else a ValueError naming the field."""
    release(v, info.field_name)
    return v


Version = Annotated[str, AfterValidator(_version)]
# the version a source ran: '' where it does not state one (the engine file's version is run)
RunVersion = Annotated[str, AfterValidator(lambda v, info: _version(v, info) if v else v)]


class EngineRuntime(Sourced):
    """One runtime of the engine's host side, run from version ``since`` until the next one's: its host seconds per
    running sequence per step, o_seq (core/times: host = o_step + o_seq·b_a), and the range outside which that figure
    is wrong (``low_s``..``high_s``, from the cited per-request costs); ``fitted_on``: the validation sources of this
    runtime alone it was fitted on (validation/host_sequence_fit.py), empty where it is the cited figure itself."""

    name: str
    since: Version
    sequence_s: float = Field(ge=0.0)
    low_s: float = Field(ge=0.0)
    high_s: float = Field(gt=0.0)
    fitted_on: list[str] = []

    @model_validator(mode="after")
    def _in_range(self):
        if not self.low_s <= self.sequence_s <= self.high_s:
            raise ValueError(f"sequence_s: {self.sequence_s:g} s is outside {self.name}'s range "
                             f"{self.low_s:g}..{self.high_s:g} s (low_s..high_s)")
        return self


class EngineHost(Sourced):
    """Whether the engine's scheduler runs its CPU work for step i + 1 while the GPU runs step i (an overlap or
    async scheduler), by version: on by default from ``overlap_since`` (None: opt-in only at every version); and its
    ``runtimes`` by version (EngineRuntime: each one's per-sequence host time; none: no per-sequence time stated)."""

    overlap_since: Version | None = None  # the first version that turns it on by default
    runtimes: list[EngineRuntime] = []  # by ``since``, oldest first

    @model_validator(mode="after")
    def _ordered(self):
        since = [release(r.since) for r in self.runtimes]
        if since != sorted(since) or len(set(since)) != len(since):
            raise ValueError("runtimes: each 'since' must be a later version than the one before")
        return self

    def runtime_at(self, version: str) -> EngineRuntime | None:
        """The runtime the engine runs at ``version``: the last one whose ``since`` is not after it (None: none
        stated, or ``version`` older than them all)."""
        at = [r for r in self.runtimes if release(r.since) <= release(version)]
        return at[-1] if at else None

    def overlaps_at(self, version: str) -> bool:
        """Whether the engine at ``version`` overlaps its scheduler's CPU work with the GPU by default: from
        ``overlap_since`` on (None: never by default)."""
        return self.overlap_since is not None and release(version) >= release(self.overlap_since)
