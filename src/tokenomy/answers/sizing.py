"""The fewest chips that serve a use case (GenZ's "minimum platforms" table, issue 30): per use case, the smallest
chip count, in powers of two, on which ``serve`` (the steady state ``tokenomy serve`` runs, layout by serve's own
rule) holds the model and a KV cache for its users and keeps the mean TTFT and TPOT within the use case's SLOs.

    chips_to_fit = min{n = 2^i : the weights and one ISL+OSL sequence of KV fit on n chips}
    min_chips    = min{n >= chips_to_fit : TTFT(n) <= TTFT SLO and TPOT(n) <= TPOT SLO and the load is within
                   the deployment's capacity}

The SLOs apply to the analytic steady state's means (MLPerf's constraints are on p99s: the simulator's percentiles
come from ``serve --method simulate``), so a count found here is the least that can work, not a guarantee. The
use cases' lengths are illustrative (each says so); their SLOs are MLPerf Inference's latency constraints for
the scenario named beside each (loadgen/mlperf.conf), or none where the scenario is offline.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.resolve import hardware_of, model_of
from tokenomy.answers.result import Result
from tokenomy.answers.workloads import serve

MLPERF_CONF = ("https://github.com/mlcommons/inference/blob/001712e9daf80386e0dda43f97b8f36981d792c4/loadgen/"
               "mlperf.conf")


@dataclass(frozen=True)
class UseCase:
    """A common use case: lengths per request and the latency its users accept (None: no constraint)."""

    name: str
    isl: int
    osl: int
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    source: str  # where the SLOs come from; the lengths are illustrative unless the source says otherwise


USE_CASES = {u.name: u for u in (
    UseCase("chat", 2048, 512, 0.45, 0.040,
            f"lengths illustrative; SLOs: MLPerf llama2-70b-interactive Server ttft 450 ms, tpot 40 ms ({MLPERF_CONF})"),
    UseCase("rag", 32768, 512, 6.0, 0.175,
            f"long-context retrieval; lengths illustrative; SLOs: MLPerf llama3_1-405b Server (long-context inputs) "
            f"ttft 6000 ms, tpot 175 ms ({MLPERF_CONF})"),
    UseCase("code-completion", 4096, 64, 0.5, 0.030,
            f"lengths illustrative; SLOs: MLPerf llama3_1-8b-interactive Server ttft 500 ms, tpot 30 ms "
            f"({MLPERF_CONF})"),
    UseCase("agent", 16384, 1024, 2.0, 0.080,
            f"one agent step over a long history; lengths illustrative; SLOs: MLPerf deepseek-r1 Server ttft 2000 "
            f"ms, tpot 80 ms ({MLPERF_CONF})"),
    UseCase("batch-summarisation", 8192, 512, None, None,
            f"lengths illustrative; no latency constraint: MLPerf's Offline scenario has none ({MLPERF_CONF})"),
)}
COLUMNS = ("use_case", "isl", "osl", "ttft_slo_s", "tpot_slo_s", "chips_to_fit", "min_chips", "plan", "ttft_s",
           "tpot_s", "tokens_per_s_per_chip", "usd_per_mtok_output", "why")
KEPT = ("plan", "ttft_s", "tpot_s", "tokens_per_s_per_chip", "usd_per_mtok_input", "usd_per_mtok_output")


def use_cases_of(use_case) -> list[UseCase]:
    """Names (a list or 'a,b') -> use cases; None: all of them."""
    if use_case is None:
        return list(USE_CASES.values())
    names = [n.strip() for n in (use_case.split(",") if isinstance(use_case, str) else use_case) if n.strip()]
    bad = [n for n in names if n not in USE_CASES]
    if bad or not names:
        raise ValueError(f"use_case: {', '.join(bad) or 'none given'}; allowed: {', '.join(USE_CASES)}")
    return [USE_CASES[n] for n in names]


def _refused_for_memory(e: ValueError) -> bool:
    """serve's refusal of a deployment the model and one sequence's KV do not fit on (its 'model: ... does not
    fit' message); every other refusal is the user's input and goes through."""
    return str(e).startswith("model:") and "does not fit" in str(e)


def _at(model, hardware, n: int, u: UseCase, concurrency: float, options: dict) -> dict | None:
    """serve's row for use case ``u`` on ``n`` chips, or None where it does not fit."""
    try:
        lengths = {"isl": u.isl, "osl": u.osl} if options.get("workload", "steady") == "steady" else {}  # a session
        # workload draws its own turns' lengths (serve refuses isl/osl beside it)
        return serve(model, hardware, concurrency=[concurrency], chips=n, **lengths, **options).rows()[0]
    except ValueError as e:
        if _refused_for_memory(e):
            return None
        raise


def _meets(row: dict, u: UseCase) -> bool:
    return (not row["capacity_limited"] and (u.ttft_slo_s is None or row["ttft_s"] <= u.ttft_slo_s)
            and (u.tpot_slo_s is None or row["tpot_s"] <= u.tpot_slo_s))


def size_one(model, hardware, u: UseCase, concurrency: float, max_chips: int, options: dict) -> dict:
    """One use case's row (module docstring): the powers of two up to ``max_chips``, smallest first."""
    out = {"use_case": u.name, "isl": u.isl, "osl": u.osl, "ttft_slo_s": u.ttft_slo_s, "tpot_slo_s": u.tpot_slo_s,
           "concurrency": concurrency, "chips_to_fit": None, "min_chips": None, **dict.fromkeys(KEPT), "why": None,
           "source": u.source}
    n, last = 1, None
    while n <= max_chips:
        row = _at(model, hardware, n, u, concurrency, options)
        if row is not None:
            out["chips_to_fit"] = out["chips_to_fit"] or n
            last = row
            if _meets(row, u):
                return out | {"min_chips": n, **{k: row[k] for k in KEPT}}
        n *= 2
    if last is None:
        return out | {"why": f"does not fit on {max_chips} chips or fewer"}
    miss = []
    if u.ttft_slo_s is not None and last["ttft_s"] > u.ttft_slo_s:
        miss.append(f"TTFT {last['ttft_s']:.3g} s > {u.ttft_slo_s:g} s")
    if u.tpot_slo_s is not None and last["tpot_s"] > u.tpot_slo_s:
        miss.append(f"TPOT {last['tpot_s']:.3g} s > {u.tpot_slo_s:g} s")
    return out | {**{k: last[k] for k in KEPT}, "why": f"on {max_chips} chips: {'; '.join(miss) or 'over capacity'}"}


@door(serve, hide=("concurrency", "rate", "isl", "osl", "chips", "mode", "pools", "method", "trace", "emit",
                   "isl_dist", "osl_dist", "requests", "seed", "protocol", "tp", "ep", "pp", "dp",
                   "redundant_experts", "attn_dp", "kv_batch", "ttft_slo", "tpot_slo"))
def min_chips(model, hardware, *, use_case=None, concurrency=16, max_chips=256, **serve_options) -> Result:
    """The fewest chips per use case (module docstring): one row per use case (``use_case``: names from
    USE_CASES, a list or 'chat,rag'; None: all), ``concurrency`` users each, chip counts 1, 2, 4, ... up to
    ``max_chips``. ``serve_options``: serve's engine, dtypes, efficiency, cache_hit, price."""
    m, hw = model_of(model), hardware_of(hardware)
    cs = inputs.numbers("concurrency", concurrency)  # the door reads concurrency as a list, as serve's
    if len(cs) != 1:
        raise ValueError(f"concurrency: one value (users per use case), got {len(cs)}")
    c = cs[0]
    top = inputs.number("max_chips", max_chips)  # bounded 1..4096 by the bounds table
    cases = use_cases_of(use_case)
    rows = [size_one(m, hw, u, c, top, serve_options) for u in cases]
    title = (f"minimum chips: {m.name} on {hw.chip.name} ({hw.name}), {c:g} concurrent users per use case, "
             f"chip counts 1..{top} in powers of two, layout by serve's rule at each")
    notes = ("SLOs are checked on the steady state's means (MLPerf constrains p99s); lengths are illustrative "
             "(each use case's source says where its SLOs come from)",)
    derivation = tuple(f"{u.name}: ISL {u.isl} / OSL {u.osl}; {u.source}" for u in cases)
    return Result("min_chips", title, tuple(rows), COLUMNS, {"model": m.name, "hardware": hw.name}, notes,
                  derivation, rows_key="rows", dims=("use_case",))
