"""Energy validation: joules per output token predicted vs published measurements, held out by source.

Cases: catalog/validation/energy/*.toml, one file per source ([source]: where, how it was measured, which energy —
"board": the GPU boards alone, as NVML reports them — and the workload; [[case]]: model, hardware, tp, a closed loop
of ``concurrency`` clients at ISL/OSL, the measured J per output token). A case is predicted the way ``tokenomy
serve`` answers it: the steady state of the serving model (serving/steady.py) on the deployment with the chip's
calibrated efficiency set as the source's engine runs it; its mean step's busy shares give the board power
(econ/energy.py), and J per output token = chips · P_board / output tokens/s.

One term is fitted: the HBM path's energy per byte e (catalog/power/facility.toml [split]), on measured board power
(the power model's own quantity; ``fit_power``, the catalog's value, fitted_on names the sources; tests/validation/
test_energy_cases.py holds it there). Held out by source (``held_out``): each source's J per output token predicted
with e fitted without it, on the other sources' measured power, or where none gives power on their J per token
(a grid over e's physical range, the median |log(pred/meas)| least). The error of a case: pred/meas − 1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.econ import energy as en
from tokenomy.serving.scheduler import profile_of
from tokenomy.serving.steady import steady
from tokenomy.validation.load import efficiency_set

HBM_GRID_STEP = 0.005


@dataclass(frozen=True)
class Predicted:
    """One case: the serving model's busy shares and output tokens/s (independent of the power split)."""

    source: str
    case: object
    chips: int
    busy: tuple[float, float, float]
    output_tokens_per_s: float


def _group_key(c, serving_engine: str):
    return (c.model, c.hardware, c.tp, c.weight_dtype, c.isl, c.osl, serving_engine)


def _serve(key, concurrency: np.ndarray):
    """The steady state of one deployment at the concurrencies (the model ``tokenomy serve`` runs)."""
    model, hardware, tp, wd, isl, osl, serving_engine = key
    hw = loader.hardware(hardware)
    # the source's max_num_seqs is the clients' count: the serving engine admits them all (vLLM's default cap is 256)
    prof = profile_of(loader.engine_file(serving_engine), tp, max_batch=int(np.max(concurrency)))
    weights = wd if wd is not None else None
    dep = Deployment(loader.model(model), hw, Layout(tp=tp), weights, prof.kv_dtype_for(
        weights or loader.model(model).quantization.dense), prof.on(efficiency_set(hw.chip.name)))
    return dep.chips, steady(dep, prof, isl=float(isl), osl=float(osl), concurrency=concurrency)


@lru_cache(maxsize=1)
def predicted() -> tuple[Predicted, ...]:
    """Every measured case through the serving model, grouped by deployment (one steady state per group)."""
    groups: dict[tuple, list] = {}
    for f in loader.energy_validation():
        if f.source.kind != "measured":
            continue
        for c in f.case:
            groups.setdefault(_group_key(c, f.source.engine), []).append((f.source.id, c))
    out = []
    for key, items in groups.items():
        chips, s = _serve(key, np.array([float(c.concurrency) for _, c in items]))
        for i, (src, c) in enumerate(items):
            busy = tuple(float(np.ravel(u)[i]) for u in (s.busy_compute, s.busy_hbm, s.busy_link))
            out.append(Predicted(src, c, chips, busy, float(np.ravel(s.output_tokens_per_s)[i])))
    return tuple(out)


def j_per_output_token(p, spec) -> float:
    """chips · P_board / output tokens/s of a predicted case under a power spec (its chip's; the split given)."""
    return p.chips * float(en.board_w(spec, *p.busy)) / p.output_tokens_per_s


def _spec(p: Predicted, hbm_j_per_byte: float):
    return replace(loader.power(loader.hardware(p.case.hardware).chip.name), hbm_j_per_byte=hbm_j_per_byte)


def errors(cases: list[Predicted], e: float) -> np.ndarray:
    """pred/meas − 1 of J per output token per case at HBM energy ``e`` J/B."""
    return np.array([j_per_output_token(p, _spec(p, e)) / p.case.j_per_output_token - 1.0 for p in cases])


def power_errors(cases: list[Predicted], e: float) -> np.ndarray:
    """pred/meas − 1 of the boards' power per case that gives it, at HBM energy ``e``."""
    return np.array([p.chips * float(en.board_w(_spec(p, e), *p.busy)) / p.case.power_w - 1.0
                     for p in cases if p.case.power_w])


def hbm_range() -> tuple[float, float]:
    return tuple(loader.facility().split.hbm_range)


def _fit(err) -> float:
    """The HBM energy in its physical range (a log grid, 1% steps) with the least median |log(1 + err(e))|."""
    lo, hi = hbm_range()
    grid = np.exp(np.arange(np.log(lo), np.log(hi) + 0.005, 0.01))
    cost = [np.median(np.abs(np.log1p(err(e)))) for e in grid]
    return float(grid[int(np.argmin(cost))])


def fit_power(cases: list[Predicted]) -> float:
    """e fitted on the measured board power of the cases that give it (the catalog's value: fitted_on)."""
    return _fit(lambda e: power_errors(cases, e))


def fit_energy(cases: list[Predicted]) -> float:
    """e fitted on the J per output token of ``cases`` (for a held-out source where no other gives power)."""
    return _fit(lambda e: errors(cases, e))


@dataclass(frozen=True)
class HeldOut:
    source: str
    hbm_j_per_byte: float  # fitted without this source
    cases: tuple[Predicted, ...]
    errors: np.ndarray


def held_out() -> list[HeldOut]:
    """Leave one source out: each source's J per output token predicted with e fitted without it — on the other
    sources' measured power where any gives it (the power model's own quantity), else on their J per token."""
    cases = list(predicted())
    out = []
    for src in sorted({p.source for p in cases}):
        train = [p for p in cases if p.source != src]
        test = [p for p in cases if p.source == src]
        e = fit_power(train) if any(p.case.power_w for p in train) else fit_energy(train)
        out.append(HeldOut(src, e, tuple(test), errors(test, e)))
    return out


def median_abs_error(parts: list[HeldOut]) -> float:
    return float(np.median(np.abs(np.concatenate([h.errors for h in parts]))))


def report_lines() -> list[str]:
    """The energy section of docs/validation.md (validation/report.py calls it): the held-out J per output token
    by source, the power check, the fitted term, the sources."""
    parts = held_out()
    cases = list(predicted())
    e = loader.facility().split.hbm_j_per_byte
    perr = power_errors(cases, e)
    L = ["## Energy: joules per output token (held out by source)", "",
         "Predicted as `tokenomy serve` answers: the serving steady state's mean step gives each unit's busy share, "
         "the power model (econ/energy.py) the board watts; J per output token = chips x board W / output tokens/s, "
         "against GPU energy measured by NVML (board only: host, network and facility are not in the measurements). "
         "One term is fitted, the HBM path's energy per byte; each source below is predicted with it fitted "
         "without that source (on the others' measured power, or where none gives power, on their J per token).", "",
         f"Held-out median |error|: **{100 * median_abs_error(parts):.1f}%** over "
         f"{sum(len(h.cases) for h in parts)} cases from {len(parts)} sources.", "",
         "| source | cases | e fitted without it (pJ/B) | median abs error | signed median | worst |",
         "|---|---|---|---|---|---|"]
    for h in parts:
        worst = h.errors[int(np.argmax(np.abs(h.errors)))]
        L.append(f"| {h.source} | {len(h.cases)} | {h.hbm_j_per_byte * 1e12:.0f} | "
                 f"{100 * np.median(np.abs(h.errors)):.1f}% | {100 * np.median(h.errors):+.1f}% | {100 * worst:+.0f}% |")
    L += ["", f"Board power where the source gives it ({perr.size} cases): median |error| "
          f"{100 * np.median(np.abs(perr)):.1f}% at the catalog's e = {e * 1e12:.0f} pJ/B (fitted on those cases: "
          "in-sample for the power, the check that the split reads the terms right).", "",
          "Sources:", ""]
    for f in loader.energy_validation():
        s = f.source
        L.append(f"- `{s.id}` ({s.kind}, {s.energy} energy, {s.as_of}): <{s.url}>. {s.how} Workload: {s.workload}")
    return L
