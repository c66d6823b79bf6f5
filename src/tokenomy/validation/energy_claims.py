"""Vendors' claims of throughput per megawatt across generations, scored apart from the measurements.

A claim (catalog/validation/energy_claims/*.toml, ``kind = "claim"``) says a newer system serves ``ratio`` times the
tokens/s per MW of an older one on a model. It is not a measurement: the workload, the interactivity and the
software behind it are mostly unstated, so each file says what was assumed, and its score never enters the held-out
figures of validation/energy_cases.py. A claim is predicted the way ``tokenomy serve`` answers: on each side, for
each listed layout, the serving steady state (serving/steady.py) with the chip's calibrated efficiency set under the
named engine, over a closed-loop concurrency grid; each point's all-in power per chip from its mean step's busy
shares (econ/energy.py, the chip's catalog/power file at the default facility class), and

    tokens/s per MW = X·(ISL + OSL) / (n · P_all-in) · 1e6          (X requests/s, n chips)
    side(I)        = max over layouts and concurrencies with 1/TPOT >= I of tokens/s per MW
    predicted      = side_newer(I) / side_older(I)     (``up_to``: the largest over the claim's interactivities
                                                         where both sides reach them; else at the first of them
                                                         both reach)
    error          = predicted / claimed − 1

Claims whose baseline the catalog cannot run, or goals for hardware not yet built, are listed with ``unscored``
saying why. Wrong outside: what the assumptions fix; disaggregated serving, speculative decoding and the vendors'
software of the day are not modelled on either side (their effect on a ratio is the claim's to show).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.econ import energy as en
from tokenomy.serving.scheduler import profile_of
from tokenomy.serving.steady import steady
from tokenomy.validation.load import efficiency_set

CONCURRENCY = np.unique(np.concatenate([2.0 ** np.arange(0, 14), 1.5 * 2.0 ** np.arange(1, 13)]))


def _points(side, model: str, isl: float, osl: float):
    """(interactivity, tokens/s per all-in MW) of every layout x concurrency point of one side that fits."""
    hw = loader.hardware(side.hardware)
    m = loader.model(model)
    p = loader.power(hw.chip.name)
    inter, per_mw = [], []
    for kw in side.layouts:
        lay = Layout(**kw)
        prof = profile_of(loader.engine_file(side.engine), int(lay.tp))
        weights = side.weight_dtype or m.quantization.dense
        dep = Deployment(m, hw, lay, side.weight_dtype, prof.kv_dtype_for(weights),
                         prof.on(efficiency_set(hw.chip.name)))
        s = steady(dep, prof, isl=isl, osl=osl, concurrency=CONCURRENCY)
        allin = en.all_in_w(p, en.board_w(p, s.busy_compute, s.busy_hbm, s.busy_link))
        with np.errstate(divide="ignore", invalid="ignore"):
            mw = np.asarray(s.requests_per_s, float) * (isl + osl) / (float(dep.chips) * allin) * 1e6
            ok = np.asarray(s.fits) & np.isfinite(mw)
            inter.append(np.where(ok, 1.0 / np.asarray(s.tpot_s, float), 0.0))
            per_mw.append(np.where(ok, mw, 0.0))
    return np.concatenate(inter), np.concatenate(per_mw)


def _at(points, interactivity: float) -> float:
    """The most tokens/s per MW at >= ``interactivity`` tok/s/user (NaN where the side never reaches it)."""
    inter, mw = points
    reach = inter >= interactivity
    return float(np.max(mw[reach])) if np.any(reach) else float("nan")


@dataclass(frozen=True)
class Scored:
    source: str
    vendor: str
    claim: object
    predicted: float  # NaN: unscored, or neither interactivity reached by both sides
    at_interactivity: float
    newer_per_mw: float
    older_per_mw: float

    @property
    def error(self) -> float:
        return self.predicted / self.claim.ratio - 1.0


def score(f, c) -> Scored:
    """One claim through the serving model (module docstring)."""
    nan = float("nan")
    if c.unscored:
        return Scored(f.source.id, f.source.vendor, c, nan, nan, nan, nan)
    new, old = (_points(s, c.model, float(c.isl), float(c.osl)) for s in (c.newer, c.older))
    options = [(_at(new, i) / _at(old, i), i, _at(new, i), _at(old, i)) for i in c.interactivity]
    options = [o for o in options if np.isfinite(o[0])]
    if not options:
        return Scored(f.source.id, f.source.vendor, c, nan, nan, nan, nan)
    best = max(options) if c.up_to else options[0]
    return Scored(f.source.id, f.source.vendor, c, *best)


@lru_cache(maxsize=1)
def scored() -> tuple[Scored, ...]:
    return tuple(score(f, c) for f in loader.energy_claims() for c in f.claim)


def report_lines() -> list[str]:
    """The claims' part of docs/validation.md's energy section: apart from the measurements, never in their figure."""
    rows = scored()
    errs = np.array([abs(s.error) for s in rows if np.isfinite(s.predicted)])
    L = ["### Vendor claims of throughput per MW (claims, not measurements; scored apart)", "",
         "Each claim is predicted as `tokenomy serve` answers it on both systems (validation/energy_claims.py): the "
         "most tokens/s per all-in MW at or above the claim's interactivity over the layouts its file lists, newer "
         "over older. The vendors rarely state the workload: each file says what was assumed.", "",
         (f"Median |predicted/claimed - 1| over {errs.size} scored claims: **{100 * np.median(errs):.0f}%** "
          "(not part of the held-out figure above)." if errs.size else "No claim scored."), "",
         "| vendor | claim | claimed | predicted | error | at tok/s/user | tok/s per MW (newer / older) | assumed |",
         "|---|---|---|---|---|---|---|---|"]
    for s in rows:
        c = s.claim
        if np.isfinite(s.predicted):
            L.append(f"| {s.vendor} | {c.text} | {c.ratio:g}x | {s.predicted:.1f}x | {100 * s.error:+.0f}% | "
                     f"{s.at_interactivity:g} | {s.newer_per_mw:,.0f} / {s.older_per_mw:,.0f} | {c.assumed} |")
        else:
            why = c.unscored or "neither side reaches the claim's interactivity on the listed layouts"
            L.append(f"| {s.vendor} | {c.text} | {c.ratio:g}x | not scored | | | | {why} |")
    L += ["", "Claim sources:", ""]
    for f in loader.energy_claims():
        L.append(f"- `{f.source.id}` ({f.source.vendor}, {f.source.as_of}): <{f.source.url}>. {f.source.how}")
    return L
