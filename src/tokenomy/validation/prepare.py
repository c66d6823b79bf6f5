"""Lower every validation case to the engine's work once; predictions then only time that work (core/engine.py).

Each serving case is a Deployment (the case's model, hardware, weight and KV dtypes, Layout(tp, dp = chips/tp)).
engine.work gives, efficiency-free:
    step      the scenario's decode step at its batch B and P interleaved prefill tokens (batch and P are known
              before any efficiency for static, decode, concurrency and max-throughput runs)
    prefill   the standalone prefill pass: B·ISL tokens for static and prefill runs, one request's ISL otherwise
    grid      decode steps at P = 0 on a batch grid (up to the KV-capacity batch + 1) and the work of one
              interleaved prefill token there, for request-rate runs, whose batch follows from Little's law
B_kv = the sequences of ISL + OSL tokens the case's engine cache holds (serving.scheduler.sequences_held, as `tokenomy serve`).
Each case's benchmark protocol (catalog/protocols, ``case_protocol``) gives its run: ``burst`` (a closed-loop run
from the first wave: burst or offline arrivals), its timed ``prompts`` (offline: every prompt one wave), whether
its lengths are fixed (``locked``: the waves stay phase-locked; serving/protocol_waves.py) and whether it reports
the median TTFT (``median``).
Training cases: validation/train_predict.py (the training model's own lowering, core.training.lower_step).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.protocol import Protocol, protocol_of
from tokenomy.serving.scheduler import EngineProfile, poll_steps, profile_of, sequences_held, step_budget
from tokenomy.serving.workload import prefill_context
from tokenomy.specs import Topology
from tokenomy.units import CHECKPOINT
from tokenomy.validation.load import Case
from tokenomy.validation.schema import ServingCase

GRID = np.unique(np.round(2.0 ** (np.arange(0, 57) / 4.0)))  # decode batch grid, 1 .. 16384, 4 points per octave
DEFAULT_MAX_BATCH = 4096  # scheduler cap when a source does not publish one (TensorRT-LLM's example log shows 4096)
SCENARIO_CODE = {s: i for i, s in enumerate(("static_batch", "prefill", "decode", "concurrency", "request_rate",
                                              "max_throughput"))}
METRIC_CODE = {m: i for i, m in enumerate(("tpot_s", "ttft_s", "latency_s", "throughput_per_chip"))}
WORK_FIELDS = tuple(f.name for f in dataclasses.fields(engine.Work))


def stack_work(items: list[engine.Work], grid: int = 0) -> engine.Work:
    """Works of the same grid shape stacked along a new leading axis (one row per case); none: empty arrays of
    shape (0,) or, for a grid of ``grid`` points, (0, grid) (a catalog selection with no aggregated case)."""
    if not items:
        return engine.Work(**{f: np.zeros((0, grid) if grid else (0,)) for f in WORK_FIELDS})
    shape = np.broadcast_shapes(*(np.shape(getattr(w, f)) for w in items for f in WORK_FIELDS))
    return engine.Work(**{f: np.stack([np.broadcast_to(np.asarray(getattr(w, f)), shape) for w in items])
                          for f in WORK_FIELDS})


def take_work(w: engine.Work, idx) -> engine.Work:
    return engine.Work(**{f: getattr(w, f)[idx] for f in WORK_FIELDS})


def _numeric(x) -> bool:
    return np.asarray(x).dtype.kind == "f"


def add_prefill(w: engine.Work, per_token: engine.Work, tokens) -> engine.Work:
    """``w`` plus ``tokens`` interleaved prefill tokens: work(P) = work(0) + P·(work per prefill token), field by
    field (the engine's work is linear in P for dense models: every field is a sum over tokens)."""
    p = np.asarray(tokens, dtype=float)
    return engine.Work(**{f: (getattr(w, f) + p * getattr(per_token, f)) if _numeric(getattr(w, f))
                          else getattr(w, f) for f in WORK_FIELDS})


@lru_cache(maxsize=None)
def deployment(model: str, hardware: str, layout: Layout, weight_dtype: str | None,
               kv_dtype: str = "bf16") -> Deployment:
    return Deployment(loader.model(model), loader.hardware(hardware), layout, weight_dtype, kv_dtype)


def case_layout(c: ServingCase) -> Layout:
    """Layout(tp, ep, dp = chips/(tp·ep)): each of dp replicas splits the model over tp·ep chips, the routed experts
    ep ways; attention data-parallel over the ep ranks where the case says so (else over all of them)."""
    return Layout(tp=c.tp, ep=c.ep, dp=c.chips // (c.tp * c.ep), kv_batch=c.kv_batch,
                  attn_dp=c.attn_dp if c.ep > 1 else None)


def case_deployment(c: ServingCase) -> Deployment:
    weights = None if c.weight_dtype == CHECKPOINT else c.weight_dtype
    return deployment(c.model, c.hardware, case_layout(c), weights, c.kv_dtype)


@dataclass(frozen=True)
class GridSide:
    """One side of the grid table (P = 0, or per prefill token): its float fields that vary along the grid as
    [fields, cases, G] and those flat along it (finite and equal at every grid point of every case: a layout's
    counts, a chip's resident weights; most of a prefill token's work) as [fields, cases], each with its row in
    the table's field order."""

    varying: np.ndarray
    varying_at: np.ndarray
    flat: np.ndarray
    flat_at: np.ndarray

    @classmethod
    def of(cls, w: engine.Work, numeric: tuple[str, ...]) -> "GridSide":
        X = np.stack([np.asarray(getattr(w, f), float) for f in numeric])
        flat = np.array([bool(np.all(np.isfinite(x)) and np.all(x == x[:, :1])) for x in X], dtype=bool)
        return cls(X[~flat], np.flatnonzero(~flat), np.ascontiguousarray(X[flat, :, 0]), np.flatnonzero(flat))

    def at(self, rows: np.ndarray, j: np.ndarray, u: np.ndarray) -> np.ndarray:
        """[fields, len(rows)]: each case's fields at grid point j + u (linear between j and j + 1). A flat field
        is x0 + 0.0 there (what the interpolation x0 + u·(x1 − x0) gives for x1 = x0, finite)."""
        out = np.empty((self.varying_at.size + self.flat_at.size, rows.size))
        x0 = self.varying[:, rows, j]
        out[self.varying_at] = x0 + u * (self.varying[:, rows, j + 1] - x0)
        out[self.flat_at] = self.flat[:, rows] + 0.0
        return out


@dataclass(frozen=True)
class GridTable:
    """The decode work of every prepared case on its batch grid, stacked once so that interpolating a step's work
    is a few index operations, not one per field: the float fields (``numeric``) at P = 0 (``at_zero``) and for
    one interleaved prefill token (``per_token``), the others (flags, codes) at P = 0 as [cases, G] each."""

    numeric: tuple[str, ...]
    at_zero: GridSide
    per_token: GridSide
    other: dict[str, np.ndarray]

    @classmethod
    def of(cls, grid: engine.Work, per_token: engine.Work) -> "GridTable":
        num = tuple(f for f in WORK_FIELDS if _numeric(getattr(grid, f)))
        return cls(num, GridSide.of(grid, num), GridSide.of(per_token, num),
                   {f: np.asarray(getattr(grid, f)) for f in WORK_FIELDS if f not in num})


@dataclass
class Serving:
    """Arrays over N serving cases, their lowered work and the hardware groups that time it."""

    cases: list[Case]
    chip: np.ndarray  # hardware name per case (the fitted terms are per chip)
    scenario: np.ndarray  # SCENARIO_CODE
    metric: np.ndarray  # METRIC_CODE
    measured: np.ndarray
    n: np.ndarray  # chips
    isl: np.ndarray
    osl: np.ndarray
    batch: np.ndarray  # fixed batch (static/prefill/decode), else NaN
    concurrency: np.ndarray
    rate: np.ndarray
    cap: np.ndarray  # scheduler cap on the decode batch
    budget: np.ndarray  # tokens per scheduler step (serving.scheduler.step_budget)
    whole: np.ndarray  # 1 where the case's engine schedules whole prompts (does not chunk prefill), else 0
    host_overlap: np.ndarray  # the case's engine's h and ε (serving.scheduler.EngineProfile: overlap scheduler and
    ep_overlap: np.ndarray  # two-batch overlap at the case's engine version and settings)
    ep_sm_normal: np.ndarray  # the SMs its dispatch/combine kernels hold under that overlap (EngineProfile.ep_sm)
    ep_sm_low_latency: np.ndarray
    eager_prefill: np.ndarray  # e: host s per kernel of its prompt passes, where its engine runs them eagerly
    poll: np.ndarray  # decode steps a new request waits for the scheduler's next receive (scheduler.poll_steps)
    burst: np.ndarray  # 1 where the case's protocol runs a closed loop from the first wave (burst or offline)
    prompts: np.ndarray  # its timed prompts (offline: the one wave's clients too)
    locked: np.ndarray  # 1 where it draws fixed lengths (phase-locked waves)
    median: np.ndarray  # 1 where the tool reports the median TTFT (LLMPerf's p50), not the mean
    bmax: np.ndarray  # KV-capacity batch limit at ISL + OSL per sequence
    step_batch: np.ndarray  # decode batch of ``step`` (request-rate runs: solved at prediction time)
    step_prefill: np.ndarray  # interleaved prefill tokens of ``step``
    flops_per_s: np.ndarray  # engine.Peaks per case
    narrow: np.ndarray  # 1 where the compute dtype has 8 bits or fewer
    attn_flops_per_s: np.ndarray  # the attention's peak, at the KV cache's dtype (engine.Peaks)
    attn_narrow: np.ndarray
    hbm_bytes_per_s: np.ndarray
    hbm_bytes: np.ndarray
    step: engine.Work  # [N]
    prefill: engine.Work  # [N]
    grid_batch: np.ndarray  # [N, G]
    grid_rows: np.ndarray  # [N] each case's row of ``grid_table``
    grid_table: GridTable  # decode work on the batch grid, shared by every subset taken

    def take(self, mask) -> "Serving":
        """The cases where ``mask`` is true (or at the given indices); the grid table is shared, not copied (the
        fit takes subsets of thousands of cases thousands of times)."""
        idx = np.flatnonzero(mask) if np.asarray(mask).dtype == bool else np.asarray(mask, dtype=int)
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = (v if f.name == "grid_table" else [v[i] for i in idx] if f.name == "cases"
                           else take_work(v, idx) if isinstance(v, engine.Work) else v[idx])
        return Serving(**out)

    def peaks(self, idx=slice(None)) -> engine.Peaks:
        return engine.Peaks(self.flops_per_s[idx], self.hbm_bytes_per_s[idx], self.hbm_bytes[idx], self.narrow[idx] > 0,
                            self.attn_flops_per_s[idx], self.attn_narrow[idx] > 0)

    def groups(self) -> list[tuple[np.ndarray, Topology]]:
        """(case indices, topology) per hardware: the engine times one topology at a time."""
        return self._groups

    @cached_property
    def _groups(self) -> list[tuple[np.ndarray, Topology]]:
        return [(np.flatnonzero(self.chip == h), loader.hardware(h).topology) for h in sorted(set(self.chip))]


def _ctx_decode(c: ServingCase) -> float:
    """Mean context during decode: ISL plus half the output (static and continuous batching alike)."""
    return c.isl + c.osl / 2.0


def case_profile(c: ServingCase) -> EngineProfile:
    """The case's serving-engine profile (catalog/engines) at the case's engine version (its overlap scheduler) and
    settings (two-batch overlap, the scheduler's receive interval), its cache share the one the source states
    (kv_free_fraction of the memory free after weights and activations, TensorRT-LLM's rule) and its batch cap."""
    prof = profile_of(loader.engine_file(c.engine), c.tp, max_batch=c.max_batch or DEFAULT_MAX_BATCH,
                      version=c.engine_version or None)
    return dataclasses.replace(prof, hbm_fraction=c.kv_free_fraction, fraction_of="free",
                               ep_overlap=max(prof.ep_overlap, float(c.two_batch_overlap)),
                               recv_interval=c.scheduler_recv_interval or prof.recv_interval)


@lru_cache(maxsize=None)
def _protocol(name: str) -> Protocol:
    return protocol_of(loader.protocol_file(name))


def case_protocol(c: ServingCase) -> tuple[float, float, float, float]:
    """(burst, prompts, locked, median) of the case's protocol (module docstring): a closed-loop run only for the
    scenarios a serving engine runs as one (concurrency, max throughput); the tool's prompt count at the case's C;
    whether the tool reports the median TTFT."""
    p = _protocol(c.protocol)
    closed = p.arrivals in ("burst", "offline") and c.scenario in ("concurrency", "max_throughput")
    if not closed or (p.arrivals == "burst" and c.scenario == "max_throughput"):
        return 0.0, 0.0, 0.0, 0.0
    n = float(p.prompt_count(c.concurrency if c.scenario == "concurrency" else None, None, c.prompts))
    return 1.0, n, float(p.draw == "fixed"), float(p.ttft_statistic == "median")


def capacity_batch(d: Deployment, c: ServingCase) -> float:
    """B_kv: sequences of ISL + OSL tokens whose KV fits the case's engine cache (serving.scheduler.sequences_held, the
    rule ``tokenomy serve`` uses: device-exposed HBM, weights and activations at a full step budget)."""
    return float(sequences_held(d, case_profile(c), c.isl, c.osl))


def _step_batch(c: ServingCase, bmax: float) -> tuple[float, float]:
    """(decode batch, interleaved prefill tokens per step) where they do not depend on the efficiency terms."""
    if c.scenario == "concurrency":
        b = min(c.concurrency, bmax)
    elif c.scenario == "max_throughput":
        b = min(c.max_batch or DEFAULT_MAX_BATCH, bmax)
    elif c.scenario == "request_rate":
        return 1.0, 0.0
    else:
        return float(c.batch), 0.0
    b = max(b, 1.0)
    return b, b * c.isl / c.osl  # every request's prefill is interleaved into the decode steps


def _chord_per_token(d: Deployment, g, ctx, w0: engine.Work, isl: int, budget: float) -> engine.Work:
    """The work of one interleaved prefill token beside g decodes: the chord (work(P) − work(0))/P to a full chunk,
    P = min(ISL, budget) — what the steps that carry a prompt carry. Dense work is linear in P (the chord is the
    slope); a routed MoE's is not: a token at P = 1 touches k experts the decodes may not have, so the slope at 0
    counts k expert weights per prefill token and P = 1000 would read more experts than the model has (DeepSeek-R1
    at 4 decodes: 72 ms for a 100-token chunk beside 9.5 ms of decode). The chord counts the experts a chunk
    touches once, as serving.scheduler.StepTimer does by timing each step at its own P."""
    P = float(max(1.0, min(isl, budget)))
    w1 = d.work(g, ctx, prefill_tokens=P, prefill_context=prefill_context(isl, 0.0, isl))
    return engine.Work(**{f: (getattr(w1, f) - getattr(w0, f)) / P if _numeric(getattr(w0, f))
                          else getattr(w0, f) for f in WORK_FIELDS})


def prepare_serving(cases: list[Case]) -> Serving:
    rows = [c for c in cases if c.kind == "serving" and c.case.mode == "agg"]  # disagg: validation/disagg_cases.py
    keys = ("n", "isl", "osl", "batch", "concurrency", "rate", "cap", "budget", "whole", "host_overlap", "ep_overlap",
            "ep_sm_normal", "ep_sm_low_latency", "eager_prefill", "poll", "burst", "prompts", "locked", "median", "bmax",
            "step_batch", "step_prefill", "flops_per_s", "narrow", "attn_flops_per_s", "attn_narrow", "hbm_bytes_per_s",
            "hbm_bytes", "measured")
    out = {k: np.full(len(rows), np.nan) for k in keys}
    steps, prefills, grids, per_tok, gb = [], [], [], [], []
    for i, case in enumerate(rows):
        c: ServingCase = case.case
        d = case_deployment(c)
        bmax = capacity_batch(d, c)
        b, p = _step_batch(c, bmax)
        ctx = _ctx_decode(c)
        steps.append(d.work(b, ctx, prefill_tokens=p, prefill_context=prefill_context(c.isl, 0.0, c.isl)))
        pf_b = float(c.batch) if c.scenario in ("static_batch", "prefill") else 1.0
        prefills.append(d.work(pf_b, c.isl, c.isl))
        g = np.minimum(GRID, max(bmax, 0.0) + 1.0)
        pk, prof = d.peaks, case_profile(c)
        budget = step_budget(prof, c.isl, min(c.max_batch or DEFAULT_MAX_BATCH, bmax))
        w0 = d.work(g, ctx)
        grids.append(w0)
        per_tok.append(_chord_per_token(d, g, ctx, w0, c.isl, budget))
        gb.append(g)
        burst, prompts, locked, median = case_protocol(c)
        vals = dict(burst=burst, prompts=prompts, locked=locked, median=median, n=c.chips, isl=c.isl, osl=c.osl, batch=c.batch if c.batch is not None else np.nan,
                    concurrency=c.concurrency if c.concurrency is not None else np.nan,
                    rate=c.request_rate if c.request_rate is not None else np.nan,
                    cap=c.max_batch or DEFAULT_MAX_BATCH, bmax=bmax, step_batch=b, step_prefill=p,
                    budget=budget,
                    whole=float(not prof.chunked_prefill), host_overlap=prof.host_overlap, ep_overlap=prof.ep_overlap,
                    ep_sm_normal=prof.ep_sm[0], ep_sm_low_latency=prof.ep_sm[1],
                    eager_prefill=prof.eager_prefill_s_per_kernel, poll=poll_steps(prof),
                    flops_per_s=pk.flops_per_s, narrow=float(pk.narrow), attn_flops_per_s=pk.attn_flops_per_s,
                    attn_narrow=float(pk.attn_narrow), hbm_bytes_per_s=pk.hbm_bytes_per_s, hbm_bytes=pk.hbm_bytes,
                    measured=c.value)
        for k, v in vals.items():
            out[k][i] = v
    return Serving(cases=rows, chip=np.array([c.case.hardware for c in rows]),
                   scenario=np.array([SCENARIO_CODE[c.case.scenario] for c in rows], dtype=int),
                   metric=np.array([METRIC_CODE[c.case.metric] for c in rows], dtype=int),
                   step=stack_work(steps), prefill=stack_work(prefills), grid_batch=np.array(gb) if gb else np.zeros((0, GRID.size)),
                   grid_rows=np.arange(len(rows)),
                   grid_table=GridTable.of(stack_work(grids, GRID.size), stack_work(per_tok, GRID.size)),
                   **out)
