"""Latency schedule: the "train departure" model and HBM drain time (lecture §2.3-2.4).

    a batch departs every tick (full or not); worst-case latency = wait (≤ one tick) + run (one step)
    step at full HBM use = HBM capacity / HBM bandwidth ("drain time", ≈20 ms on many generations)
    one serving unit's throughput = B / step; its share of a global traffic = that / global tokens/s
Tokens/s per user (1/step in decode) against tokens/s per chip (B/(step·n)) over batch is a Pareto curve.
"""

from __future__ import annotations

import numpy as np

from tokenomy.core.engine import BOUNDS
from tokenomy.econ.cost import Terms

# Lecture §2.4/§2.10: Gemini's announced traffic is "in the hundreds of millions of tokens per second";
# the lecture's own worked figure is "five hundred million tokens a second".
GLOBAL_TOKENS_PER_S = 5e8


def drain_time_s(capacity_bytes, bytes_per_s):
    """capacity / bandwidth: the time to read a whole memory once (Rubin: 288 GB / 20 TB/s = 14.4 ms)."""
    return np.asarray(capacity_bytes, float) / np.asarray(bytes_per_s, float)


def worst_case_latency_s(step_s, tick_s=None):
    """Wait for the next departure (at most one tick) plus the run (one step); tick defaults to the step."""
    step = np.asarray(step_s, float)
    return (step if tick_s is None else np.asarray(tick_s, float)) + step


def tokens_per_s(batch, step_s):
    """One serving unit: B tokens per step (lecture L4: 2,000 × 64/s = 128,000 tok/s)."""
    return np.asarray(batch, float) / np.asarray(step_s, float)


def fraction_of_traffic(unit_tokens_per_s, global_tokens_per_s=GLOBAL_TOKENS_PER_S):
    """Share of a global traffic one unit serves (lecture L5: ≈1/1000 of Gemini)."""
    return np.asarray(unit_tokens_per_s, float) / np.asarray(global_tokens_per_s, float)


def pareto_mask(per_user, per_chip):
    """True where no other point is at least as good on both axes and better on one (NaN never wins)."""
    u, c = np.asarray(per_user, float), np.asarray(per_chip, float)
    ok = np.isfinite(u) & np.isfinite(c)
    uu, cc = np.where(ok, u, -np.inf), np.where(ok, c, -np.inf)
    ge = (uu[None, :] >= uu[:, None]) & (cc[None, :] >= cc[:, None])
    gt = (uu[None, :] > uu[:, None]) | (cc[None, :] > cc[:, None])
    return ok & ~np.any(ge & gt, axis=1)


def drain_rows(chips) -> list[dict]:
    """Drain time of each chip generation's HBM. ``chips``: iterable of ``specs.Chip``."""
    return [{"chip": c.name, "display_name": c.display_name, "hbm_bytes": c.hbm_bytes,
             "hbm_bytes_per_s": c.hbm_bytes_per_s, "drain_s": float(drain_time_s(c.hbm_bytes, c.hbm_bytes_per_s)),
             "preliminary": c.preliminary} for c in chips]


def schedule_rows(t: Terms, chips: int, tick_s=None, global_tokens_per_s=GLOBAL_TOKENS_PER_S) -> list[dict]:
    """Per batch of a decode sweep: the departure schedule, one unit's throughput and the Pareto flag.
    The step is the engine's (TPOT: pipelined stages included), so per user = 1/step and per chip = B/(step·n)."""
    step = np.where(t.fits, t.step_s, np.nan)
    unit = tokens_per_s(t.batch, step)
    per_user, per_chip = np.where(t.fits, t.tokens_per_s_per_user, np.nan), unit / chips
    front = pareto_mask(per_user, per_chip)
    wc = worst_case_latency_s(step, tick_s)
    out = []
    for i in range(np.size(step)):
        ok = bool(np.ravel(t.fits)[i])
        g = lambda x: (float(np.ravel(x)[i]) if ok else None)  # noqa: E731
        out.append({"batch": int(np.ravel(t.batch)[i]), "step_s": g(step),
                    "tick_s": g(step if tick_s is None else np.broadcast_to(tick_s, np.shape(step))),
                    "worst_case_latency_s": g(wc), "unit_tokens_per_s": g(unit),
                    "fraction_of_global": g(fraction_of_traffic(unit, global_tokens_per_s)),
                    "tokens_per_s_per_user": g(per_user), "tokens_per_s_per_chip": g(per_chip),
                    "bound": BOUNDS[int(np.ravel(t.bound)[i])] if ok else None,
                    "pareto": bool(front[i]), "fits": ok})
    return out
