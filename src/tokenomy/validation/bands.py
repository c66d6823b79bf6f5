"""Error bands by regime: the spread of the leave-one-source-out errors, and the one rule that finds a regime.

A regime is (metric, chip family, serving engine, dense/MoE, agg/disagg, batch band, length band). For each the
band is the n and the 10th/50th/90th percentiles of the leave-one-source-out time error of its cases (the report's
sign, validation/metrics.optimism: predicted/measured − 1 for times, measured/predicted − 1 for throughput, so a
negative error always means the model promised more than was measured), with the batch and length range its cases
span. A cell with fewer than MIN_CASES cases is coarsened along LEVELS: the length band is dropped first, then
agg/disagg and the engine, then dense/MoE; the chip family and the batch band are never dropped, so a
configuration on a chip family or at a batch no case measured gets no band (``lookup`` says why) instead of one
borrowed from elsewhere.

    batch   the running decode batch (a decode step's B; a serving run's running sequences)
    length  the mean context of a decode step, ISL + OSL/2 tokens (validation/prepare's decode context; decode's
            ``context``)
The metrics: tpot_s (TPOT and decode-dominated static latencies, the report's DECODE_METRICS), ttft_s,
throughput_per_chip.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_CASES = 10  # a band's percentiles from fewer cases would be noise
BATCH_EDGES = (8.0, 64.0, 512.0)  # upper edges: 1-8, 9-64, 65-512, 513+
BATCH_LABELS = ("1-8", "9-64", "65-512", "513+")
LENGTH_EDGES = (2048.0, 8192.0, 32768.0)  # tokens of mean decode context
LENGTH_LABELS = ("<=2k", "2k-8k", "8k-32k", ">32k")
DIMS = ("metric", "chip_family", "engine", "moe", "mode", "batch_band", "length_band")
LEVELS = (DIMS, DIMS[:6], ("metric", "chip_family", "moe", "batch_band"), ("metric", "chip_family", "batch_band"))
ANY = "*"  # a dimension a coarsened band does not distinguish
BAND_METRICS = {"tpot_s": ("tpot_s", "latency_s"), "ttft_s": ("ttft_s",),
                "throughput_per_chip": ("throughput_per_chip",)}


def batch_band(batch) -> np.ndarray:
    """The batch band label of each batch (array or number)."""
    return np.asarray(BATCH_LABELS)[np.searchsorted(BATCH_EDGES, np.asarray(batch, float), side="left")]


def length_band(length) -> np.ndarray:
    return np.asarray(LENGTH_LABELS)[np.searchsorted(LENGTH_EDGES, np.asarray(length, float), side="left")]


@dataclass(frozen=True)
class Band:
    """One regime's band: the dimensions it distinguishes (ANY where coarsened) and its statistics."""

    key: dict[str, str]
    n: int
    p10: float
    p50: float
    p90: float
    batch_min: float
    batch_max: float
    length_min: float
    length_max: float

    @property
    def name(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.key.items() if v != ANY)


def regime(row: dict) -> dict[str, str]:
    """The finest regime of a validation row (run.rows' fields plus chip_family, moe, mode, length)."""
    metric = next((m for m, ms in BAND_METRICS.items() if row["metric"] in ms), None)
    return {"metric": metric, "chip_family": row["chip_family"], "engine": row["engine"],
            "moe": "moe" if row["moe"] else "dense", "mode": row.get("mode", "agg"),
            "batch_band": str(batch_band(row["batch"])), "length_band": str(length_band(row["length"]))}


def compute(rows: list[dict], min_cases: int = MIN_CASES) -> list[Band]:
    """Every regime at every level with at least ``min_cases`` cases, from leave-one-source-out rows."""
    ok = [r for r in rows if r["metric"] in sum(BAND_METRICS.values(), ()) and np.isfinite(r["calibrated_error"])]
    keys = [regime(r) for r in ok]
    out = []
    for level in LEVELS:
        cells: dict[tuple, list[int]] = {}
        for i, k in enumerate(keys):
            cells.setdefault(tuple(k[d] for d in level), []).append(i)
        for cell, idx in sorted(cells.items()):
            if len(idx) < min_cases:
                continue
            e = np.array([ok[i]["calibrated_error"] for i in idx])
            b = np.array([ok[i]["batch"] for i in idx])
            ln = np.array([ok[i]["length"] for i in idx])
            p10, p50, p90 = (float(x) for x in np.percentile(e, [10, 50, 90]))
            key = {d: (cell[level.index(d)] if d in level else ANY) for d in DIMS}
            out.append(Band(key, len(idx), p10, p50, p90, float(b.min()), float(b.max()), float(ln.min()),
                            float(ln.max())))
    return out


@dataclass(frozen=True)
class Found:
    band: Band | None
    note: str | None  # why there is no band


def lookup(bands: list[Band], query: dict[str, str | None]) -> Found:
    """The finest band whose regime holds the query (LEVELS, finest first); a dimension the query leaves None
    (decode has no serving engine) matches only levels that do not distinguish it. None, with the reason, when
    the query's chip family or batch band has no band at the coarsest level."""
    index = {tuple(b.key[d] for d in DIMS): b for b in bands}
    for level in LEVELS:
        if any(query.get(d) is None for d in level):
            continue
        hit = index.get(tuple(query[d] if d in level else ANY for d in DIMS))
        if hit is not None:
            return Found(hit, None)
    return Found(None, _why(bands, query))


def _why(bands: list[Band], q: dict) -> str:
    if not bands:
        return ("no validated case near this configuration (no error-band table: catalog/efficiency/"
                "error_bands.toml is written by tokenomy validate --loso)")
    same = [b for b in bands if b.key["metric"] == q["metric"]]
    if not any(b.key["chip_family"] == q["chip_family"] for b in same):
        why = f"chip family {q['chip_family']} has fewer than {MIN_CASES} validated {q['metric']} cases"
    else:
        why = f"no {q['chip_family']} {q['metric']} band at batch {q['batch_band']} ({MIN_CASES}+ cases)"
    return f"no validated case near this configuration ({why})"


def from_table(table) -> list[Band]:
    """Bands from the catalog's table (catalog.loader.error_bands: one dict per band)."""
    return [Band({d: str(b.get(d, ANY)) for d in DIMS}, int(b["n"]), b["p10"], b["p50"], b["p90"], b["batch_min"],
                 b["batch_max"], b["length_min"], b["length_max"]) for b in table]


def to_toml(bands: list[Band], cases: int, sources: int, as_of: str) -> str:
    """catalog/efficiency/error_bands.toml: the bands with where they come from."""
    lines = ["# Error bands by regime (data, not code). Regenerate with: tokenomy validate --loso",
             f'source = "measured: leave-one-source-out errors of tokenomy validate --loso, {cases} cases from '
             f'{sources} sources (validation/bands.py)"', f'as_of = "{as_of}"',
             'error = "time error: predicted/measured - 1 for times, measured/predicted - 1 for throughput '
             '(negative = the model promised more performance than was measured)"',
             f"min_cases = {MIN_CASES}",
             f"batch_bands = {list(BATCH_LABELS)!r}".replace("'", '"'),
             f"length_bands = {list(LENGTH_LABELS)!r}".replace("'", '"'), ""]
    for b in bands:
        lines += ["[[band]]"] + [f'{d} = "{b.key[d]}"' for d in DIMS]
        lines += [f"n = {b.n}", f"p10 = {b.p10!r}", f"p50 = {b.p50!r}", f"p90 = {b.p90!r}",
                  f"batch_min = {b.batch_min!r}", f"batch_max = {b.batch_max!r}", f"length_min = {b.length_min!r}",
                  f"length_max = {b.length_max!r}", ""]
    return "\n".join(lines)
