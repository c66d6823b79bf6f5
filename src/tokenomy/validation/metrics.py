"""Error statistics: absolute percentage error per case, then median, share within 20% and signed bias per group.

    error_i = predicted_i / measured_i − 1          (signed; negative = the model is too fast / too optimistic
                                                     for times, too pessimistic for throughput)
    MdAPE   = median |error_i|
    within  = share of cases with |error_i| ≤ 20%
    bias    = median error_i, with times and throughputs put on the same footing: for throughput the sign is
              flipped so that a negative bias always means "predicts better performance than measured".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WITHIN = 0.20


def signed_error(pred, measured) -> np.ndarray:
    return np.asarray(pred, dtype=float) / np.asarray(measured, dtype=float) - 1.0


def pseudo_huber(r, scale: float) -> np.ndarray:
    """2·s²·(sqrt(1 + (r/s)²) − 1): r² for |r| << s, 2·s·|r| beyond it — a fit's loss in which a case its model
    misses by far (a missing mechanism) pulls on the terms linearly, not quadratically."""
    return 2 * scale ** 2 * (np.sqrt(1 + (np.asarray(r, dtype=float) / scale) ** 2) - 1)


def optimism(err, is_throughput) -> np.ndarray:
    """Error as 'how much slower reality is': −(pred/meas − 1) for throughputs, (pred/meas − 1) for times,
    after converting throughput to time (meas/pred − 1) so both read as time errors."""
    e = np.asarray(err, dtype=float)
    return np.where(is_throughput, 1.0 / (1.0 + e) - 1.0, e)


@dataclass(frozen=True)
class Stats:
    n: int
    n_missing: int  # the model returned no number (the configuration does not fit in its memory model)
    mdape: float
    within: float
    bias: float

    def row(self) -> dict:
        return {"n": self.n, "no_prediction": self.n_missing, "median_abs_error": self.mdape,
                "within_20pct": self.within, "signed_bias": self.bias}


def stats(time_err) -> Stats:
    """Statistics of time-equivalent signed errors (see ``optimism``); NaN = no prediction."""
    e = np.asarray(time_err, dtype=float)
    ok = np.isfinite(e)
    if not ok.any():
        return Stats(int(e.size), int((~ok).sum()), float("nan"), float("nan"), float("nan"))
    a = np.abs(e[ok])
    return Stats(int(ok.sum()), int((~ok).sum()), float(np.median(a)), float(np.mean(a <= WITHIN)),
                 float(np.median(e[ok])))


def grouped(keys: list[tuple], time_err: np.ndarray) -> dict[tuple, Stats]:
    """Stats per distinct key tuple, in sorted key order."""
    out: dict[tuple, Stats] = {}
    arr = np.asarray(time_err, dtype=float)
    for k in sorted(set(keys)):
        sel = np.array([kk == k for kk in keys])
        out[k] = stats(arr[sel])
    return out
