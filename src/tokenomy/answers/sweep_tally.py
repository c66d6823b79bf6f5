"""What a sweep's caller keeps of each chunk, wherever the chunk was evaluated: the count of points by reason code
(valid and fitting, or why not) and, if asked, the Pareto fronts (sweep_front.Fronts: the front of a union is the
front of the fronts). A dask worker that writes its own Parquet part tallies its chunk and returns the tally alone
(kilobytes, not the chunk's arrays); the client merges them."""

from __future__ import annotations

import numpy as np

from tokenomy.answers.sweep_axes import Grid
from tokenomy.answers.sweep_eval import REASONS
from tokenomy.answers.sweep_front import Fronts


class Tally:
    """``counts[code]`` points per reason code; ``fronts`` the Pareto fronts (None unless asked)."""

    def __init__(self, grid: Grid, fronts: bool = False) -> None:
        self.counts = np.zeros(len(REASONS), dtype=np.int64)
        self.fronts = Fronts(grid) if fronts else None

    def add(self, block: tuple[slice, ...], values: dict) -> None:
        """One chunk's arrays."""
        self.counts += np.bincount(np.ravel(values["reason"]).astype(np.int64), minlength=len(REASONS))
        if self.fronts is not None:
            self.fronts.add(block, values)

    def merge(self, other: "Tally") -> None:
        """Another's tally (a chunk's, from the worker that evaluated it)."""
        self.counts += other.counts
        if self.fronts is not None and other.fronts is not None:
            self.fronts.merge(other.fronts)

    def by_code(self) -> dict[int, int]:
        return {int(c): int(n) for c, n in enumerate(self.counts) if n}
