"""Published training runs (catalog/training_runs/*.toml) and what the model predicts for them.

    chip-hours = tokens · FLOPs_per_token(convention) / (peak · MFU) / 3600
with FLOPs per token from the catalog architecture through the pass engine (core/training.py) under the attention
convention the run's MFU uses, and the peak of its chip at ``mfu_peak_dtype``. Each file records its inputs with source and as_of.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.training import chip_hours_at_mfu, train_flops_per_token
from tokenomy.units import SECONDS_PER_HOUR

RUNS = "training_runs"  # catalog/training_runs/<name>.toml
REQUIRED = ("name", "model", "chip", "chips", "tokens", "seq_len", "mfu", "mfu_attention", "published_chip_hours",
            "source", "as_of", "note")


@dataclass(frozen=True)
class PublishedRun:
    name: str
    display_name: str
    model: str
    chip: str
    chips: int
    tokens: float
    seq_len: int
    mfu: float
    mfu_attention: str
    mfu_peak_dtype: str
    mfu_independent: bool
    published_chip_hours: float
    published_chip_hours_scope: str
    published_tokens_per_s: float | None
    published_flops: float | None
    published_flops_attention: str | None
    precision: str
    source: str
    as_of: str
    note: str


def run_names() -> list[str]:
    return loader.catalog_stems(RUNS)


@lru_cache(maxsize=None)
def load_run(name: str) -> PublishedRun:
    if name.lower() not in run_names():
        raise ValueError(f"unknown training run {name!r}; allowed: {', '.join(run_names())}")
    d = loader.read_toml(RUNS, name.lower())
    missing = [k for k in REQUIRED if k not in d]
    if missing:
        raise ValueError(f"{name.lower()}.toml: missing field(s) {', '.join(missing)}")
    return PublishedRun(
        d["name"], d.get("display_name", d["name"]), d["model"], d["chip"], int(d["chips"]), float(d["tokens"]),
        int(d["seq_len"]), float(d["mfu"]), d["mfu_attention"], d.get("mfu_peak_dtype", "bf16"),
        bool(d.get("mfu_independent", True)), float(d["published_chip_hours"]),
        d.get("published_chip_hours_scope", ""), d.get("published_tokens_per_s"), d.get("published_flops"),
        d.get("published_flops_attention"), d.get("precision", "bf16"), d["source"], str(d["as_of"]), d["note"])


@dataclass(frozen=True)
class RunCheck:
    """Prediction vs publication for one run; errors are predicted/published - 1."""

    run: PublishedRun
    flops_per_token: float
    model_flops: float
    peak_flops_per_s: float
    chip_hours: float
    chip_hours_error: float
    days: float
    tokens_per_s: float
    throughput_chip_hours: float | None  # at the published tokens/s, when stated
    throughput_error: float | None
    flops_error: float | None  # vs the published total, under the convention the publication uses


def check_run(run: PublishedRun | str) -> RunCheck:
    r = load_run(run) if isinstance(run, str) else run
    hw = loader.hardware(r.chip)
    dep = Deployment(loader.model(r.model), hw)
    _, peak = hw.chip.flops_for(r.mfu_peak_dtype)
    fpt = float(train_flops_per_token(dep, r.seq_len, r.mfu_attention).model)
    flops = r.tokens * fpt
    hours = float(chip_hours_at_mfu(flops, peak, r.mfu))
    tps = r.chips * peak * r.mfu / fpt
    thr = thr_err = f_err = None
    if r.published_tokens_per_s:
        thr = r.tokens / r.published_tokens_per_s * r.chips / SECONDS_PER_HOUR
        thr_err = hours / thr - 1
    if r.published_flops:
        conv = r.published_flops_attention or r.mfu_attention
        f_err = r.tokens * float(train_flops_per_token(dep, r.seq_len, conv).model) / r.published_flops - 1
    return RunCheck(r, fpt, flops, peak, hours, hours / r.published_chip_hours - 1, hours / r.chips / 24, tps,
                    thr, thr_err, f_err)


def check_rows() -> list[dict]:
    """One row per published run, for the CLI and the docs."""
    out = []
    for n in run_names():
        k = check_run(n)
        out.append({"run": n, "chips": k.run.chips, "chip": k.run.chip, "tokens": k.run.tokens, "mfu": k.run.mfu,
                    "attention": k.run.mfu_attention, "model_flops": k.model_flops,
                    "predicted_chip_hours": k.chip_hours, "published_chip_hours": k.run.published_chip_hours,
                    "error_fraction": k.chip_hours_error, "throughput_error_fraction": k.throughput_error,
                    "flops_error_fraction": k.flops_error, "mfu_independent": k.run.mfu_independent})
    return out
