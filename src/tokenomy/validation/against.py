"""A user's measured runs as validation cases, predicted by the catalog's predictor (prepare.py + predict.py).

Every run of the file becomes up to four ServingCase rows (schema.py), one per metric it reported: TTFT (ttft_s),
TPOT and vLLM's ITL (both tpot_s: the model's decode step time), output throughput per chip (the run's output
tokens/s over its chips). The case carries the tool as its ``protocol``, so whatever protocol modelling the
predictor has applies to user files as to the catalog. How the run issued requests, from the file:
    request rate given           scenario request_rate (open loop, at that rate)
    else clients given           scenario concurrency (closed loop of that many clients)
    else a prompt count          scenario concurrency with every prompt a client (rate inf: all sent at once)
What the file cannot tell (hardware, chips, tp, dtypes, engine; the load where a CSV holds none) comes from
``Setup``. Errors (time-equivalent, metrics.optimism): predicted/measured − 1, negative = the model too fast.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokenomy.catalog import loader
from tokenomy.validation import ingest_aiperf, ingest_guidellm, ingest_vllm, load
from tokenomy.validation.measured_run import MeasuredRun
from tokenomy.validation.metrics import optimism, signed_error
from tokenomy.validation.predict import bound_names, predict_serving
from tokenomy.validation.theta import gather, roofline_theta
from tokenomy.validation.prepare import prepare_serving
from tokenomy.validation.schema import ServingCase, Source
from tokenomy.validation.terms_schema import EfficiencyTerms

CASE_METRIC = {"ttft_s": "ttft_s", "tpot_s": "tpot_s", "itl_s": "tpot_s", "output_tokens_per_s": "throughput_per_chip"}
SHOWN = {"ttft_s": "ttft_s", "tpot_s": "tpot_s", "itl_s": "itl_s", "output_tokens_per_s": "throughput_per_chip"}
FORMAT_URL = {"vllm-bench": ingest_vllm.FORMAT_URL, "aiperf": ingest_aiperf.FORMAT_URL,
              "guidellm": ingest_guidellm.FORMAT_URL}
SUFFIXES = ("-instruct", "-chat", "-it", "-hf", "-base")  # served names that add these to a catalog model's name


@dataclass(frozen=True)
class Setup:
    """What a benchmark file cannot tell: the deployment it measured, and its load where the file holds none."""

    hardware: str
    model: str | None = None  # a catalog name or config path; None: the model the file names
    chips: int | None = None  # None: tp (one replica)
    tp: int = 1
    weight_dtype: str = "checkpoint"
    kv_dtype: str = "bf16"
    engine: str | None = None  # None: the engine the file names, else vllm
    engine_version: str = ""
    concurrency: int | None = None  # only where the file gives no load (an AIPerf CSV)
    rate: float | None = None


def catalog_model_of(model_id: str | None) -> str | None:
    """The catalog name a served model id means ('meta-llama/Meta-Llama-3.1-8B-Instruct' -> 'llama-3.1-8b'):
    the id, its repository part, then that part without an -instruct/-chat/... suffix or a 'Meta-' prefix."""
    if not model_id:
        return None
    repo = model_id.rsplit("/", 1)[-1].lower()
    tries = [model_id, repo] + [repo.removesuffix(s) for s in SUFFIXES if repo.endswith(s)]
    tries += [t.removeprefix("meta-") for t in tries if t.lower().startswith("meta-")]
    return next((hit for t in tries if (hit := loader.catalog_model(t))), None)


def model_name(runs: list[MeasuredRun], setup: Setup) -> str:
    """The model: the Setup's, else the one the file names, if the catalog has it."""
    if setup.model:
        return setup.model
    ids = sorted({r.model_id for r in runs if r.model_id})
    hit = catalog_model_of(ids[0]) if len(ids) == 1 else None
    if hit is None:
        said = f"the file names {', '.join(ids)}" if ids else "the file names no model"
        raise ValueError(f"model: {said}, not a catalog model; give --model (a catalog name, a config.json path or "
                         "a directory holding one)")
    return hit


def engine_name(runs: list[MeasuredRun], setup: Setup) -> str:
    hints = {r.engine_hint for r in runs if r.engine_hint}
    return setup.engine or (hints.pop() if len(hints) == 1 else "vllm")


def _load(run: MeasuredRun, setup: Setup) -> dict:
    """The case's scenario keywords (module docstring); the Setup's load only where the file has none."""
    if (run.request_rate or run.concurrency) and (setup.rate or setup.concurrency):
        raise ValueError(f"concurrency: {run.label} states its load ({_said(run)}); drop --concurrency/--rate")
    rate, clients = run.request_rate or setup.rate, run.concurrency or setup.concurrency or run.num_prompts
    if rate:
        return dict(scenario="request_rate", request_rate=float(rate))
    if clients:
        return dict(scenario="concurrency", concurrency=int(clients))
    raise ValueError(f"concurrency: {run.label} does not say how its requests were issued; give --concurrency or "
                     "--rate")


def _said(run: MeasuredRun) -> str:
    return f"rate {run.request_rate:g}/s" if run.request_rate else f"concurrency {run.concurrency}"


def _prompts(run: MeasuredRun) -> dict:
    """The run's prompt count for the protocol run, where the case schema carries one (the protocol modelling's
    ``prompts``; until then the load alone)."""
    return {"prompts": run.num_prompts} if run.num_prompts and "prompts" in ServingCase.model_fields else {}


def cases(runs: list[MeasuredRun], setup: Setup, stem: str) -> list[ServingCase]:
    """One ServingCase per run and metric, ids '<stem>-<run>-<metric>'."""
    chips = setup.chips or setup.tp
    out = []
    for i, run in enumerate(runs):
        base = dict(model=model_name(runs, setup), hardware=setup.hardware, chips=chips, tp=setup.tp,
                    weight_dtype=setup.weight_dtype, kv_dtype=setup.kv_dtype, engine=engine_name(runs, setup),
                    engine_version=setup.engine_version, protocol=run.tool, isl=max(1, round(run.isl)),
                    osl=max(1, round(run.osl)), **_load(run, setup), **_prompts(run))
        for m, v in run.measured().items():
            value = v / chips if m == "output_tokens_per_s" else v
            tool = f"{run.tool} {run.tool_version}".strip()
            out.append(ServingCase(id=f"{stem}-{i + 1}-{m}", metric=CASE_METRIC[m], value=value,
                                   published=f"{run.label}: {m} {v:.6g} ({tool})", **base))
    return out


def wrap(serving: list[ServingCase], runs: list[MeasuredRun], path: Path, split=lambda c: "test") -> list[load.Case]:
    """The cases as the predictor takes them (validation.load.Case), their source the user's file."""
    tool = runs[0].tool
    src = Source(id=path.stem, title=f"user benchmark file {path.name}", url=FORMAT_URL[tool],
                 as_of=dt.date.today().isoformat(), kind="user measurement", framework=serving[0].engine,
                 note=str(path))
    return [load.Case(c, src, split(c)) for c in serving]


def terms_for(hardware: str) -> dict[str, EfficiencyTerms]:
    """The calibrated terms of the hardware's chip (catalog/efficiency/<chip>.toml, else the pooled fit)."""
    return {hardware: load.efficiency_for(loader.hardware(hardware).chip.name).terms}


def point_of(case_id: str) -> int:
    """The run index (from 1) of a case id '<stem>-<run>-<metric>'."""
    return int(case_id.rsplit("-", 2)[-2])


def rows(cs: list[load.Case], terms: dict[str, EfficiencyTerms] | None) -> list[dict]:
    """Measured vs predicted per case; ``terms`` None: the roofline set."""
    s = prepare_serving(cs)
    pred = predict_serving(s, roofline_theta(s) if terms is None else gather(s.chip, terms))
    out = []
    for i, case in enumerate(cs):
        c = case.case
        tput = c.metric == "throughput_per_chip"
        err = float(optimism(signed_error(pred.value[i], c.value), tput))
        out.append({"point": point_of(case.id), "metric": SHOWN[case.id.rsplit("-", 1)[-1]], "scenario": c.scenario,
                    "concurrency": c.concurrency, "rate": c.request_rate, "isl": c.isl, "osl": c.osl,
                    "measured": float(c.value), "predicted": float(pred.value[i]), "error": err,
                    "bound": bound_names([pred.bound[i]])[0], "split": case.split})
    return out


def summary(rs: list[dict], split: str | None = None) -> dict[str, float]:
    """Median |error| per metric (over the rows of ``split`` when given; NaN predictions left out)."""
    by: dict[str, list[float]] = {}
    for r in rs:
        if split is None or r["split"] == split:
            by.setdefault(r["metric"], []).append(abs(r["error"]))
    return {m: float(np.nanmedian(v)) if np.isfinite(v).any() else float("nan") for m, v in sorted(by.items())}
