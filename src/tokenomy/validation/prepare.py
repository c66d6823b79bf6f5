"""Lower every validation case to the engine's work once; predictions then only time that work (core/engine.py).

Each serving case is a Deployment (the case's model, hardware, weight and KV dtypes, Layout(tp, dp = chips/tp)).
engine.work gives, efficiency-free:
    step      the scenario's decode step at its batch B and P interleaved prefill tokens (batch and P are known
              before any efficiency for static, decode, concurrency and max-throughput runs)
    prefill   the standalone prefill pass: B·ISL tokens for static and prefill runs, one request's ISL otherwise
    grid      decode steps at P = 0 on a batch grid (up to the KV-capacity batch + 1) and the work of one
              interleaved prefill token there, for request-rate runs, whose batch follows from Little's law
B_kv (the sequences of ISL + OSL tokens the case's engine cache holds), the case's engine profile and its benchmark
protocol come from case_setup.py. The protocol gives each case's run: ``burst`` (a closed-loop run from the first
wave: burst or offline arrivals), its timed ``prompts`` (offline: every prompt one wave), whether its lengths are
fixed (``locked``: the waves stay phase-locked; serving/protocol_waves.py) and whether it reports the median TTFT
(``median``). The stacked arrays and the grid's interpolation table: work_table.py.
Training cases: validation/train_predict.py (the training model's own lowering, core.training.lower_step).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.serving.scheduler import batch_wait_of, poll_steps, step_budget
from tokenomy.serving.workload import prefill_context
from tokenomy.specs import Topology
from tokenomy.validation.case_setup import (DEFAULT_MAX_BATCH, capacity_batch, case_deployment, case_layout,
                                            case_profile, case_protocol)
from tokenomy.validation.load import Case
from tokenomy.validation.schema import ServingCase
from tokenomy.validation.work_table import WORK_FIELDS, GridTable, numeric, stack_work, take_work

GRID = np.unique(np.round(2.0 ** (np.arange(0, 57) / 4.0)))  # decode batch grid, 1 .. 16384, 4 points per octave
SCENARIO_CODE = {s: i for i, s in enumerate(("static_batch", "prefill", "decode", "concurrency", "request_rate",
                                              "max_throughput"))}
METRIC_CODE = {m: i for i, m in enumerate(("tpot_s", "ttft_s", "latency_s", "throughput_per_chip"))}


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
    host_seq: np.ndarray  # o_seq of its engine's runtime at its version (EngineProfile.sequence_s, s per sequence)
    ep_sm_normal: np.ndarray  # the SMs its dispatch/combine kernels hold under that overlap (EngineProfile.ep_sm)
    ep_sm_low_latency: np.ndarray
    eager_prefill: np.ndarray  # e: host s per kernel of its prompt passes, where its engine runs them eagerly
    mixed: np.ndarray  # m: 1 where its engine runs prompt chunks in the decode step, 0 as a pass of their own
    expert_tile: np.ndarray  # B_M: rows its engine's MoE grouped GEMM pads each expert to ([moe_kernel])
    poll: np.ndarray  # decode steps a new request waits for the scheduler's next receive (scheduler.poll_steps)
    wait_iters: np.ndarray  # TensorRT-LLM's delayed batching: T iterations and ρ_w·N_tok tokens (batch_wait_of; 0 off),
    wait_tokens: np.ndarray  # the held steps charged by steady.solve at its batch (batch_wait.held_steps)
    burst: np.ndarray  # 1 where the case's protocol runs a closed loop from the first wave (burst or offline)
    prompts: np.ndarray  # its timed prompts (offline: the one wave's clients too; an open loop's run: inf unstated)
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
    return engine.Work(**{f: (getattr(w1, f) - getattr(w0, f)) / P if numeric(getattr(w0, f))
                          else getattr(w0, f) for f in WORK_FIELDS})


SCALARS = tuple(f.name for f in dataclasses.fields(Serving) if f.type == "np.ndarray"
                and f.name not in ("chip", "scenario", "metric", "grid_batch", "grid_rows"))  # one float per case


def _case_values(c: ServingCase, d: Deployment, bmax: float, step: tuple[float, float], budget: float) -> dict:
    """The case's scalars in Serving's fields: its run, its engine's profile, its protocol and its chip's peaks."""
    prof, pk, (b, p) = case_profile(c), d.peaks, step
    burst, prompts, locked, median = case_protocol(c)
    given = lambda x: np.nan if x is None else x  # noqa: E731  (a scenario's unused load is NaN)
    return dict(n=c.chips, isl=c.isl, osl=c.osl, batch=given(c.batch), concurrency=given(c.concurrency),
                rate=given(c.request_rate), cap=c.max_batch or DEFAULT_MAX_BATCH, budget=budget,
                whole=float(not prof.chunked_prefill), host_overlap=prof.host_overlap, ep_overlap=prof.ep_overlap,
                host_seq=prof.sequence_s,
                ep_sm_normal=prof.ep_sm[0], ep_sm_low_latency=prof.ep_sm[1],
                eager_prefill=prof.eager_prefill_s_per_kernel, mixed=float(prof.mixed_prefill),
                expert_tile=prof.expert_tile_rows(c.moe_kernel),
                poll=poll_steps(prof), **_batch_wait(c, prof), burst=burst, prompts=prompts,
                locked=locked, median=median, bmax=bmax, step_batch=b, step_prefill=p, flops_per_s=pk.flops_per_s,
                narrow=float(pk.narrow), attn_flops_per_s=pk.attn_flops_per_s, attn_narrow=float(pk.attn_narrow),
                hbm_bytes_per_s=pk.hbm_bytes_per_s, hbm_bytes=pk.hbm_bytes, measured=c.value)


def _batch_wait(c: ServingCase, prof) -> dict:
    """The case's delayed batching (scheduler.batch_wait_of on its layout), as steady.solve charges it: the held
    steps of a later request at the solved batch, closed loop or open."""
    T, tokens = batch_wait_of(prof, case_layout(c))
    return dict(wait_iters=T, wait_tokens=tokens)


def _prepare_case(c: ServingCase) -> tuple[dict, tuple[engine.Work, ...], np.ndarray]:
    """One case lowered (module docstring): its scalars, (step, prefill, grid at P = 0, per prefill token) and its
    batch grid."""
    d = case_deployment(c)
    bmax = capacity_batch(d, c)
    b, p = _step_batch(c, bmax)
    ctx = _ctx_decode(c)
    step = d.work(b, ctx, prefill_tokens=p, prefill_context=prefill_context(c.isl, 0.0, c.isl))
    prefill = d.work(float(c.batch) if c.scenario in ("static_batch", "prefill") else 1.0, c.isl, c.isl)
    g = np.minimum(GRID, max(bmax, 0.0) + 1.0)
    budget = step_budget(case_profile(c), c.isl, min(c.max_batch or DEFAULT_MAX_BATCH, bmax))
    w0 = d.work(g, ctx)
    works = (step, prefill, w0, _chord_per_token(d, g, ctx, w0, c.isl, budget))
    return _case_values(c, d, bmax, (b, p), budget), works, g


def prepare_serving(cases: list[Case]) -> Serving:
    """The aggregated serving cases of ``cases`` lowered once (module docstring), as Serving's arrays."""
    rows = [c for c in cases if c.kind == "serving" and c.case.mode == "agg"]  # disagg: validation/disagg_cases.py
    each = [_prepare_case(c.case) for c in rows]
    out = {k: np.array([v[k] for v, _, _ in each], dtype=float) for k in SCALARS}
    steps, prefills, grids, per_tok = (list(ws) for ws in zip(*(w for _, w, _ in each))) if each else ([],) * 4
    return Serving(cases=rows, chip=np.array([c.case.hardware for c in rows]),
                   scenario=np.array([SCENARIO_CODE[c.case.scenario] for c in rows], dtype=int),
                   metric=np.array([METRIC_CODE[c.case.metric] for c in rows], dtype=int),
                   step=stack_work(steps), prefill=stack_work(prefills),
                   grid_batch=np.array([g for _, _, g in each]) if each else np.zeros((0, GRID.size)),
                   grid_rows=np.arange(len(rows)),
                   grid_table=GridTable.of(stack_work(grids, GRID.size), stack_work(per_tok, GRID.size)), **out)
