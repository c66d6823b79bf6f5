"""Fit one engine runtime's per-sequence host time o_seq (catalog/engines [host] runtimes; core/times: host = o_step
+ o_seq·b_a) on that runtime's validation cases alone, the chips' stored terms held.

The loss is the catalog fit's (validation/fit_loss.py: Σ w·softL1(log(pred/measured)), each metric weighted equally)
over the cases whose engine runs that runtime at the case's version (``runtime_mask``); the search is a scan of o_seq
on a log grid across the runtime's stated range (low_s..high_s) and 0, refined by golden section around the best
point (one term: no simplex needed). A runtime whose cases never run enough sequences for o_seq·b_a to reach the
critical path gives a flat loss: ``identified`` says so, and its figure stays the cited one.

    PYTHONPATH=src python -m tokenomy.validation.host_sequence_fit    # every runtime with cases, after --refit
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tokenomy.catalog import loader
from tokenomy.validation.fit_loss import NAN_RESIDUAL, SOFT_SCALE, _weights
from tokenomy.validation.metrics import pseudo_huber
from tokenomy.validation.predict import predict_serving
from tokenomy.validation.prepare import Serving
from tokenomy.validation.theta import Theta, gather

GRID_POINTS = 24  # log-spaced o_seq values across a runtime's range, besides 0
FLAT = 1e-3  # a loss that moves less than this across the range leaves o_seq unidentified


def runtime_mask(s: Serving, serving_engine: str, runtime: str) -> np.ndarray:
    """The cases of ``s`` whose engine is ``serving_engine`` running ``runtime`` (its [host] runtimes name) at their
    version."""
    f = loader.engine_file(serving_engine)
    out = []
    for c in s.cases:
        r = f.runtime_at(c.case.engine_version) if c.case.engine == serving_engine else None
        out.append(r is not None and r.name == runtime)
    return np.array(out, dtype=bool)


def loss_at(s: Serving, th: Theta, o_seq: float) -> float:
    """The fit's loss over ``s``'s cases with every case's runtime o_seq at ``o_seq`` (its chips' own terms ``th``)."""
    r = np.log(predict_serving(dataclasses.replace(s, host_seq=np.full(len(s.cases), o_seq)), th).value / s.measured)
    r = np.where(np.isfinite(r), r, NAN_RESIDUAL)
    w = _weights(s.metric)
    return float(np.sum(w * pseudo_huber(r, SOFT_SCALE)) / np.sum(w))


@dataclasses.dataclass(frozen=True)
class RuntimeFit:
    serving_engine: str
    runtime: str
    sources: tuple[str, ...]  # the validation sources of its cases
    cases: int
    sequence_s: float  # the o_seq minimising the loss
    loss_range: float  # highest minus lowest loss over the scan: below FLAT, o_seq is not identified

    @property
    def identified(self) -> bool:
        return self.loss_range >= FLAT


def fit_runtime(s: Serving, terms: dict, serving_engine: str, runtime: str) -> RuntimeFit | None:
    """o_seq of ``serving_engine``'s ``runtime`` fitted on its cases in ``s`` (None: it has none), the chips' ``terms``
    (validation.run.stored_terms) held."""
    mask = runtime_mask(s, serving_engine, runtime)
    if not mask.any():
        return None
    sub = s.take(mask)
    th = gather(sub.chip, terms)
    r = next(x for x in loader.engine_file(serving_engine).host.runtimes if x.name == runtime)
    lo = max(r.low_s, r.high_s * 1e-3)
    xs = np.concatenate([[0.0], np.geomspace(lo, r.high_s, GRID_POINTS)])
    ls = np.array([loss_at(sub, th, x) for x in xs])
    best = _golden(lambda u: loss_at(sub, th, float(np.exp(u))), xs, int(np.argmin(ls)))
    return RuntimeFit(serving_engine, runtime, tuple(sorted({c.source.id for c in sub.cases})), int(mask.sum()),
                      best, float(ls.max() - ls.min()))


def _golden(f, xs: np.ndarray, i: int, iters: int = 12) -> float:
    """The minimum of f(log x) between the grid's neighbours of point ``i`` (0 stays 0: the grid's first point)."""
    if i == 0:
        return 0.0
    a, b = np.log(xs[max(i - 1, 1)]), np.log(xs[min(i + 1, len(xs) - 1)])
    g = (np.sqrt(5.0) - 1.0) / 2.0
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return float(np.exp((a + b) / 2.0))


def main() -> None:
    from tokenomy.validation import run

    p = run.prepare()
    s = p.serving
    terms = run.stored_terms(s.chip)
    for engine in loader.engine_names():
        for r in loader.engine_file(engine).host.runtimes:
            fit = fit_runtime(s, terms, engine, r.name)
            if fit is None:
                print(f"{engine} {r.name}: no cases")
                continue
            print(f"{engine} {r.name}: o_seq {fit.sequence_s * 1e6:.2f} us on {fit.cases} cases "
                  f"({', '.join(fit.sources)}); loss moves {fit.loss_range:.4f} across 0..{r.high_s * 1e6:g} us"
                  f"{'' if fit.identified else ' (not identified)'}; catalog {r.sequence_s * 1e6:.2f} us")


if __name__ == "__main__":
    main()
