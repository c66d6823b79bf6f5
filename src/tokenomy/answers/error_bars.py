"""The error band on an answer's rows: where a measurement would fall, by the leave-one-source-out errors of the
validated cases of the row's regime (validation/bands.py: the regime, its coarsening and the sign of the error).

For a field f the row gains f_p10 and f_p90, the 10th and 90th percentiles of the measured value given the
prediction v. With e the regime's time error (predicted/measured − 1 for times, measured/predicted − 1 for
throughput): a time measures v/(1 + e), so f_p10 = v/(1 + e_p90) and f_p90 = v/(1 + e_p10); a throughput
measures v·(1 + e), so f_p10 = v·(1 + e_p10), f_p90 = v·(1 + e_p90). ``error_band`` names the regime of each
field ("tpot_s: metric=tpot_s, chip_family=hopper, ..."); where no validated regime holds the configuration the
fields are None and ``error_band_note`` says why — never a band borrowed from another chip family or batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tokenomy.catalog import loader
from tokenomy.validation import bands as vb

TIMES = ("tpot_s", "ttft_s")  # band metrics that are times (the rest are throughputs)
# each answer's banded fields and the validated metric whose errors make the band: a decode step is a time per
# output token, a prefill pass a time to first token
DECODE = {"step_s": "tpot_s", "tokens_per_s_per_chip": "throughput_per_chip"}
PREFILL = {"step_s": "ttft_s"}
SERVE = {"ttft_s": "ttft_s", "tpot_s": "tpot_s", "tokens_per_s_per_chip": "throughput_per_chip"}
PLAN = {"step_s": "tpot_s", "ttft_s": "ttft_s", "tokens_per_s_per_chip": "throughput_per_chip"}


@dataclass(frozen=True)
class Regime:
    """What a question fixes about its rows' regime: the chip family, the serving engine (None: a bare pass,
    any engine), dense or MoE, agg or disagg, and which row field is which band metric."""

    chip_family: str
    serving_engine: str | None
    moe: bool
    mode: str
    fields: tuple[tuple[str, str], ...]  # (row field, band metric)


def regime_of(dep, serving_engine: str | None, fields: dict[str, str], mode: str = "agg") -> Regime:
    """The regime of a Deployment's answers (its chip's family, its model dense or MoE)."""
    moe = any(layer.mlp.kind == "moe" for layer in dep.model.layers)
    return Regime(loader.chip_family(dep.hardware.chip.name), serving_engine, moe, mode, tuple(fields.items()))


@lru_cache(maxsize=1)
def _bands() -> tuple[vb.Band, ...]:
    return tuple(vb.from_table(loader.error_bands()))


@lru_cache(maxsize=4096)
def _find(reg: Regime, metric: str, batch_band: str, length_band: str) -> vb.Found:
    q = {"metric": metric, "chip_family": reg.chip_family, "engine": reg.serving_engine,
         "moe": "moe" if reg.moe else "dense",
         "mode": reg.mode, "batch_band": batch_band, "length_band": length_band}
    return vb.lookup(list(_bands()), q)


def band_of(value: float | None, metric: str, found: vb.Found) -> tuple[float | None, float | None]:
    """(p10, p90) of the measured value given the prediction ``value`` (module docstring)."""
    if value is None or found.band is None:
        return None, None
    b = found.band
    if metric in TIMES:
        return value / (1.0 + b.p90), value / (1.0 + b.p10)
    return value * (1.0 + b.p10), value * (1.0 + b.p90)


def attach(rows: list[dict], reg: Regime, batch_key: str, length) -> list[dict]:
    """``rows`` with each banded field's _p10/_p90, ``error_band`` and ``error_band_note`` (module docstring);
    the batch from each row's ``batch_key``, the mean decode context from ``length`` (a row field name, or tokens)."""
    for row in rows:
        ctx = row.get(length) if isinstance(length, str) else length
        batch = row.get(batch_key)
        names, notes = [], []
        for field, metric in reg.fields:
            if row.get(field) is None:  # no prediction (does not fit): no band either
                row[f"{field}_p10"] = row[f"{field}_p90"] = None
                continue
            if batch is None or ctx is None:
                found = vb.Found(None, "no prediction at this point")
            else:
                found = _find(reg, metric, str(vb.batch_band(batch)), str(vb.length_band(ctx)))
            row[f"{field}_p10"], row[f"{field}_p90"] = band_of(row.get(field), metric, found)
            if found.band is not None:
                names.append(f"{field}: {found.band.name} (n={found.band.n})")
            elif found.note not in notes:
                notes.append(found.note)
        row["error_band"] = "; ".join(names) or None
        row["error_band_note"] = "; ".join(notes) or None
    return rows


def band_arrays(reg: Regime, values: dict, batch, length, shape) -> dict[str, np.ndarray]:
    """``attach`` for a sweep's arrays: each banded field's _p10 and _p90 over the points (NaN where no band). The
    factors p10/v and p90/v of every (batch band, length band) pair are looked up once; each point gathers its
    pair's (one index per point, not one lookup)."""
    nb, nl = len(vb.BATCH_LABELS), len(vb.LENGTH_LABELS)
    pair = (np.searchsorted(vb.BATCH_EDGES, np.asarray(batch, float), side="left") * nl
            + np.searchsorted(vb.LENGTH_EDGES, np.asarray(length, float), side="left"))
    out = {}
    for field, metric in reg.fields:
        lo_f, hi_f = np.full(nb * nl, np.nan), np.full(nb * nl, np.nan)
        for k in range(nb * nl):
            band = _find(reg, metric, vb.BATCH_LABELS[k // nl], vb.LENGTH_LABELS[k % nl]).band
            if band is not None:
                lo_f[k], hi_f[k] = ((1.0 / (1.0 + band.p90), 1.0 / (1.0 + band.p10)) if metric in TIMES
                                    else (1.0 + band.p10, 1.0 + band.p90))
        v = np.asarray(values[field], float)
        out[f"{field}_p10"] = np.broadcast_to(v * lo_f[pair], shape)
        out[f"{field}_p90"] = np.broadcast_to(v * hi_f[pair], shape)
    return out
