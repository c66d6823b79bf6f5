"""train and rl: a training step (and a run), an RL step — each one Result (a model's life: answers/life.py).

    train(...)      core/training.py's step on the plan given (FLOPs and compute from the pass engine), its memory
                    per chip, and with ``tokens`` the run's days, chip-hours and $; ``published`` checks the
                    catalog's published runs instead (econ/published.py); ``search`` the fastest layouts that fit
                    (answers/train_layouts.py)
    rl(...)         econ/rl.py: rollouts priced with the pass engine (Deployment.run), then training on them
Keyword arguments are the CLI options of ``tokenomy train|rl`` (dashes as underscores), already parsed;
payload() is what the command's ``--json`` prints. Bad values raise ValueError naming the field.
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.energy_cols import power_of, train_energy
from tokenomy.answers.resolve import dtype_of, hardware_of, model_of
from tokenomy.answers.result import Result
from tokenomy.answers.train_request import TRAIN_KEYWORDS, checked, train_bytes, train_plan
from tokenomy.answers.variants import reports_hardware
from tokenomy.core.memory import MEMORY_TERMS, overflow_message
from tokenomy.core.schedules import BackwardSplit, bubble_formula
from tokenomy.core.train_time import ROOFLINE_TRAIN, TrainEfficiency
from tokenomy.core.training import STEP_TERMS, Lowering, TrainPlan, ep_overlap_of, train_run, train_step
from tokenomy.econ.published import check_rows, run_names
from tokenomy.econ.rl import RlRequest, rl_step, rollout_deployment
from tokenomy.units import SECONDS_PER_DAY, fmt_bytes, fmt_seconds, fmt_si

TRAIN_COLUMNS = ("global_batch", "chips", "step_s", "roofline_step_s", "bound", "mfu", "bubble_fraction", "comm_exposed_s",
                 "memory_per_chip_bytes", "fits", "days", "chip_hours", "usd")
PUBLISHED_COLUMNS = ("run", "chips", "chip", "mfu", "attention", "model_flops", "predicted_chip_hours",
                     "published_chip_hours", "error_fraction", "throughput_error_fraction", "engine_mfu",
                     "engine_chip_hours", "engine_error_fraction")
RL_KEYS = ("rollout_s", "rollout_tokens_per_s", "rollout_usd", "train_s", "train_usd", "usd", "usd_per_generated_mtok",
           "effective_mfu", "efficiency_penalty", "fits")


def _pick(x, shape, i):
    v = np.ravel(np.broadcast_to(x, shape) if shape else x)[i].item()
    return None if isinstance(v, float) and v != v else v  # NaN (a plan that does not fit) -> None


def train_rows(st, run, plan: TrainPlan, energy: dict | None = None) -> list[dict]:
    """One row per global batch: the step's terms, its memory per chip and (with a run) days, chip-hours, $;
    ``energy``: answers.energy_cols.train_energy's arrays (power, J per token, MWh)."""
    shape = np.shape(st.tokens_per_step)
    rows = []
    for i in range(int(np.prod(shape)) if shape else 1):
        g = lambda x: _pick(x, shape, i)  # noqa: E731
        fits = bool(g(st.fits))
        row = {"global_batch": int(g(np.asarray(plan.global_batch))), "chips": int(g(st.chips)),
               "dp": int(g(np.asarray(plan.dp))), "tp": int(plan.tp), "pp": int(plan.pp), "cp": int(plan.cp),
               "ep": int(plan.ep), "zero": int(plan.zero), "schedule": plan.schedule, "recompute": plan.recompute,
               "recompute_modules": ",".join(plan.recompute_modules),
               "ep_overlap": float(ep_overlap_of(plan)), "tp_overlap": float(plan.tp_overlap),
               "attention_kernel": plan.attention_kernel, "fp8_scaling": plan.fp8_scaling,
               "microbatches": g(st.microbatches), "tokens_per_step": g(st.tokens_per_step),
               "flops_per_token": g(st.flops.model), "n_active_params": g(st.flops.n_active),
               "model_flops": g(st.model_flops), "hardware_flops": g(st.hardware_flops)}
        for k in ("compute_s", "bubble_fraction", "bubble_s", "tp_s", "ep_s", "ep_exposed_s", "cp_s", "dp_s", "pp_s",
                  "comm_s", "comm_exposed_s"):
            row[k] = g(getattr(st, k))
        row.update({"comm_overlapped_s": g(st.comm_s) - g(st.comm_exposed_s) if fits else None,
                    "modelled_step_s": g(st.modelled_step_s), "implied_flops_fraction": g(st.implied_flops_fraction),
                    "step_s": g(st.step_s), "roofline_step_s": g(st.roofline_step_s), "efficiency": st.efficiency,
                    "bound": STEP_TERMS[int(g(st.bound))] if fits else None,
                    "mfu_given": st.mfu_given, "tokens_per_s": g(st.tokens_per_s), "mfu": g(st.mfu)})
        mem = st.memory
        row.update({f"{t}_bytes": g(getattr(mem, f"{t}_bytes")) for t in MEMORY_TERMS})
        row.update({"memory_per_chip_bytes": g(mem.total_bytes), "hbm_bytes": g(mem.hbm_bytes), "fits": fits,
                    "why": None if fits else overflow_message(mem, i)})
        if run is not None:
            row.update({"tokens": g(run.tokens), "steps": g(run.steps),
                        "days": g(run.time_s) / SECONDS_PER_DAY if fits else None, "chip_hours": g(run.chip_hours),
                        "usd": g(run.usd)})
        row.update({k: g(v) if fits else None for k, v in (energy or {}).items()})
        rows.append(row)
    return rows


def explain_train(m, hw, plan, st, run, i: int) -> list[str]:
    """The step's derivation at point ``i``: each formula with the numbers plugged in."""
    g = lambda x: float(np.ravel(x)[min(i, np.size(x) - 1)])  # noqa: E731
    fl, mem = st.flops, st.memory
    n, peak = g(st.chips), st.peak_flops_per_s
    v = plan.virtual_stages if plan.schedule == "interleaved" else 1
    split = BackwardSplit(*(g(x) for x in (st.split.f, st.split.b, st.split.w)))  # T_F, T_B, T_W at point i
    out = [f"[bold]{m.name}: global batch {g(plan.global_batch):g} x seq {g(plan.seq_len):g} = "
           f"{fmt_si(g(st.tokens_per_step))} tokens/step on {n:g} chips[/bold]",
           f"  FLOPs/token = 6*N_active + attention ({fl.convention}) = 6*{fmt_si(g(fl.n_active))} + "
           f"{fmt_si(g(fl.attention))} = {fmt_si(g(fl.model))}FLOP  (N_active: weights a token multiplies; "
           f"total parameters set memory and gradient traffic)",
           f"  hardware FLOPs/token = 6*N_active + causal attention (executed) {fmt_si(g(fl.attention_executed))} + "
           f"recompute ({plan.recompute}) {fmt_si(g(fl.recompute))} = {fmt_si(g(fl.hardware))}",
           f"  compute_s = t_dense/eta + t_expert/(eta*g(F_e)) + phi*t_bf16 (core/train_time.py; terms "
           f"{st.efficiency}) over the engine's forward of the busiest chip x (3 + recompute): "
           f"{fmt_si(g(st.hardware_flops))} FLOP on {n:g} chips at {fmt_si(peak)}FLOP/s -> "
           f"{fmt_seconds(g(st.compute_s))}",
           f"  bubble = {bubble_formula(plan.schedule, plan.pp, g(st.microbatches), v, split)} = "
           f"{100 * g(st.bubble_fraction):.1f}% -> {fmt_seconds(g(st.bubble_s))} ({plan.schedule}; core/schedules.py)",
           f"  comms per step: TP {fmt_seconds(g(st.tp_s))}, EP {fmt_seconds(g(st.ep_s))}, CP {fmt_seconds(g(st.cp_s))},"
           f" DP {fmt_seconds(g(st.dp_s))}, PP {fmt_seconds(g(st.pp_s))}; exposed {fmt_seconds(g(st.comm_exposed_s))}"
           f" (TP under --tp-overlap of the compute; DP hidden under the last backward, CP under attention, EP under "
           f"--ep-overlap of the compute, all of it under DualPipe)",
           f"  step_s = (compute + TP_exposed + EP_exposed + CP_exposed)/(1 - bubble) + DP_exposed + PP_exposed = "
           f"{fmt_seconds(g(st.modelled_step_s))} (roofline terms: {fmt_seconds(g(st.roofline_step_s))}); binding term: {STEP_TERMS[int(g(st.bound))] if g(st.fits) else '-'}"
           f"; MFU cap (eta = 1) {100 * g(st.mfu_cap):.1f}%"]
    if st.mfu_given:
        out.append(f"  with the MFU given: step_s = model FLOPs / (chips * peak * MFU) = {fmt_seconds(g(st.step_s))}; "
                   f"the modelled terms match it at eta = {g(st.implied_flops_fraction):.3g} of peak in the matmuls "
                   f"(use --flops-fraction to carry that calibration to other plans)")
    out.append(f"  MFU = model FLOPs / (step_s * chips * peak) = {100 * g(st.mfu):.1f}%")
    terms = " + ".join(f"{t} {fmt_bytes(g(getattr(mem, f'{t}_bytes')))}" for t in MEMORY_TERMS)
    out.append(f"  memory/chip = {terms} = {fmt_bytes(g(mem.total_bytes))} of {fmt_bytes(g(mem.hbm_bytes))} "
               f"(activations: stored {fmt_bytes(g(mem.act_stored_bytes))}, working {fmt_bytes(g(mem.act_working_bytes))},"
               f" logits {fmt_bytes(g(mem.logits_bytes))})")
    if run is not None:
        out.append(f"  run: {fmt_si(g(run.tokens))} tokens / {fmt_si(g(st.tokens_per_step))} per step = "
                   f"{g(run.steps):.4g} steps x {fmt_seconds(g(st.step_s))} = {g(run.time_s) / 86400:.4g} days; "
                   f"chip-hours = time x chips = {fmt_si(g(run.chip_hours))}; $ = x {hw.usd_per_chip_hour:g}/chip-h = "
                   f"${fmt_si(g(run.usd))}")
    return out


TRAIN_EFFICIENCY_SETS = ("calibrated", "roofline")


def train_efficiency_of(hw, name: str = "calibrated") -> TrainEfficiency:
    """The training terms ``train`` times a step under: "calibrated" = the chip's fitted terms
    (catalog/efficiency/<chip>.toml, else the pooled fit; fitted on the validation catalog's training cases through
    this same model, tokenomy.validation.train_predict), "roofline" = η 1, φ 0 (the bound)."""
    if name == "roofline":
        return ROOFLINE_TRAIN
    if name != "calibrated":
        raise ValueError(f"efficiency: {name!r}; allowed: {', '.join(TRAIN_EFFICIENCY_SETS)}")
    from tokenomy.validation.load import efficiency_for
    from tokenomy.validation.train_predict import train_efficiency

    f = efficiency_for(hw.chip.name)
    return train_efficiency(f.terms, name=f"calibrated ({f.chip})")


def published_runs(published: str) -> Result:
    names = run_names() if published == "all" else [inputs.choice("published", published, run_names() + ["all"])]
    from tokenomy.answers.published_engine import engine_check, layout_of

    rows = []
    for r in check_rows():
        if r["run"] in names:
            e = engine_check(r["run"]) if layout_of(r["run"]) is not None else {}
            rows.append({**r, "engine_mfu": e.get("mfu"), "engine_chip_hours": e.get("engine_chip_hours"),
                         "engine_error_fraction": e.get("engine_error_fraction")})
    return Result("train", "published runs: chip-hours = FLOPs/(chips' peak x MFU); engine_: the run's own layout "
                  "through train (its layout table in catalog/training_runs; MFU predicted, at its peak dtype; "
                  "divided by the run's goodput)",
                  tuple(rows), PUBLISHED_COLUMNS, rows_key="")


@door(TRAIN_KEYWORDS)
@reports_hardware
def train(*, model=None, hardware="h100-sxm", published=None, search=False, **kw) -> Result:
    """A training step of the plan given (module docstring); ``global_batch`` may be a list (one row each);
    ``search``: the fastest layouts that fit instead (parallel/train_search.py), tp/pp/cp/ep/schedule/recompute
    and the EP overlap left to it. ``attention_kernel``: "fused" (cuDNN / FA3 class, Megatron and DeepSeek) or "fa2"
    (PyTorch SDPA's FlashAttention-2, torchtitan; core/attention_kernel.py); ``fp8_scaling`` under FP8 GEMMs:
    "fused" (Transformer Engine's casts inside the neighbouring kernels, per-tensor or block-scaled as DeepSeek-V3)
    or "tensorwise" (torchao's dynamic per-tensor casts as HBM passes of their own; core/fp8_casts.py);
    ``offload_layers``: layers whose activations wait in host memory (memory only; core/memory.on_device_layers);
    ``recompute_modules``: Megatron-Core's list under recompute "selective" (a comma string or a list of core_attn,
    moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts; empty: core_attn; core/recompute_modules.py)."""
    if published:
        return published_runs(published)
    v = {**TRAIN_KEYWORDS, **kw}
    if search:  # every value is checked as without search (one grammar), then the search reads its own
        checked(v)
        from tokenomy.answers.train_layouts import SEARCH_KEYWORDS, train_search

        return train_search(model, hardware, {k: v[k] for k in SEARCH_KEYWORDS})
    if not model:
        raise ValueError("model: required (or published: a run name, or 'all')")
    v = checked(v)
    m, hw = model_of(model), hardware_of(hardware)
    plan = train_plan(v, hw)
    st = train_step(m, hw, plan, mfu=v["mfu"], efficiency=train_efficiency_of(hw, v["efficiency"]),
                    flops_fraction=v["flops_fraction"], lowering=Lowering(v["attention"], v["compute_dtype"],
                                                                          train_bytes(v)))
    return _train_result(m, hw, plan, st, v)


def _train_result(m, hw, plan: TrainPlan, st, v: dict) -> Result:
    """train's Result of step ``st``: one row per global batch, the run's days and dollars where ``tokens`` is
    given, the derivation of each."""
    tokens = v["tokens"]
    run = train_run(st, tokens, hw.usd_per_chip_hour) if tokens else None
    rows = train_rows(st, run, plan, train_energy(power_of(hw), st, run))
    derivation = [line for i, r in enumerate(rows) for line in
                  explain_train(m, hw, plan, st, run, i) + ([f"  [red]{r['why']}[/red]"] if not r["fits"] else [])]
    title = (f"train: {m.name} on {rows[0]['chips']} x {hw.chip.name} (dp {plan.dp}, tp {plan.tp}, pp {plan.pp}, "
             f"cp {plan.cp}, ep {plan.ep}, {plan.schedule}, recompute {plan.recompute}, seq {plan.seq_len}; "
             f"{'MFU given' if v['mfu'] else f'training terms {st.efficiency}'})")
    return Result("train", title, tuple(rows),
                  tuple(c for c in TRAIN_COLUMNS if run is not None or c not in ("days", "chip_hours", "usd")),
                  notes=tuple(f"global batch {r['global_batch']}: {r['why']}" for r in rows if not r["fits"]),
                  derivation=tuple(derivation), rows_key="")


# what one RL step does (econ.rl.RlRequest), with the defaults: rl's keywords beside the deployment's
RL_KEYWORDS = {"rollouts": 1024, "prompt_len": 1024, "output_len": 8192, "flops_factor": 6.0, "train_mfu": 0.4}


@door(RL_KEYWORDS)
@reports_hardware
def rl(*, model=None, hardware=None, chips=None, batch=(16, 64, 256), weight_dtype=None, **kw) -> Result:
    """One RL step per concurrent-rollout batch (econ/rl.py); the keywords RL_KEYWORDS build its RlRequest."""
    q = RlRequest(**{**RL_KEYWORDS, **kw})
    for field in ("rollouts", "prompt_len", "output_len", "train_mfu"):
        inputs.optional(field, getattr(q, field))
    inputs.optional("chips", chips)
    m, hw = model_of(model), hardware_of(hardware)
    B = np.atleast_1d(np.asarray(batch, dtype=float))
    r = rl_step(rollout_deployment(m, hw, chips, dtype_of("weight_dtype", weight_dtype)), q, B)
    rows = []
    for i, b in enumerate(B):
        row = {"batch": int(b), "tokens_per_step": float(r.tokens_per_step), "train_flops": float(r.train_flops)}
        for k in RL_KEYS:
            v = np.ravel(np.broadcast_to(getattr(r, k), B.shape))[i].item()
            row[k] = bool(v) if k == "fits" else (None if v != v else v)
        rows.append(row)
    return Result("rl", f"rl step: {m.name} on {hw.name}", tuple(rows),
                  ("batch", "tokens_per_step", "rollout_s", "train_s", "usd", "usd_per_generated_mtok",
                   "effective_mfu", "efficiency_penalty", "fits"),
                  notes=tuple(f"batch {row['batch']}: rollouts do not fit in HBM" for row in rows if not row["fits"]),
                  rows_key="")
