"""lifecycle: a model's life — pre-training + RL + inference — as one record (``tokenomy lifecycle``).

    default   econ/lifecycle.py: the size minimising pre-training + RL + inference $ at a quality target
    infer     the inverse: equal pre-training, RL and inference cost from the demand
    run       a published training run's phases, each from the answer that owns it (answers/lifecycle_engine.py)
Keyword arguments are the CLI options of ``tokenomy lifecycle`` (dashes as underscores), already parsed; payload()
is the record ``--json`` prints. Bad values raise ValueError naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.energy_cols import lifecycle_mwh, power_of
from tokenomy.answers.resolve import hardware_of
from tokenomy.answers.result import Result
from tokenomy.answers.variants import reports_hardware
from tokenomy.econ import lifecycle as lc
from tokenomy.econ.scaling import chinchilla_tokens, loss
from tokenomy.units import SECONDS_PER_DAY, fmt_si


@dataclass(frozen=True)
class RecordResult(Result):
    """An answer that is one record: payload() is the record itself (``tokenomy lifecycle --json``)."""

    def payload(self):
        return self.rows()[0]


def _inverse(demand, period_days, active_params, pen, models_per_family) -> RecordResult:
    r = lc.infer_from_inference(demand, period_days, active_params, pen, models_per_family)
    row = {"tokens_per_s": demand / models_per_family, "period_days": period_days, "d_inf": r.d_inf,
           "d_pre": r.d_pre, "d_rl": r.d_rl, "n_active_params": active_params, "d_chinchilla": r.d_chinchilla,
           "overtraining": r.overtraining, "ratio_pre_rl_inf": list(r.ratio)}
    derivation = (
        f"[bold]D_inf = rate x period = {fmt_si(r.d_inf)} tokens[/bold]",
        f"  equal costs: 6*D_pre = {pen.rl_flops_factor:g}*{pen.rl_penalty:g}*D_RL = 2*{pen.inference_penalty:g}*D_inf",
        f"  D_pre = 2*{pen.inference_penalty:g}/6 * D_inf = {fmt_si(r.d_pre)};  D_RL = 6/({pen.rl_flops_factor:g}*"
        f"{pen.rl_penalty:g}) * D_pre = {fmt_si(r.d_rl)}",
        f"  D_Chinchilla = 20*N = {fmt_si(r.d_chinchilla)};  over-training = D_pre/D_Chinchilla = {r.overtraining:.4g}x")
    return RecordResult("lifecycle", "lifecycle (inverse): equal pre-training, RL, inference cost", (row,),
                        tuple(row), derivation=derivation, rows_key="")


# lifecycle's keywords by what reads them, with their defaults: the quality target (the size search), the
# penalties (econ.lifecycle.Penalties), the inverse's (``infer``), the engine split's (``run``: LifecycleRequest)
QUALITY_KEYWORDS = {"target_loss": None, "target_params": 1e11}
PENALTY_KEYWORDS = {"rl_flops_factor": 3.0, "rl_penalty": 3.0, "inference_penalty": 3.0}
INVERSE_KEYWORDS = {"active_params": 1e11, "models_per_family": 1.0}
ENGINE_KEYWORDS = {"serve_hardware": "hgx-h200-8", "pretrain_tokens": None, "prompt_len": 1024, "output_len": 8192,
                   "rollout_concurrency": 256, "isl": 1024, "osl": 1024, "inference_concurrency": 256}
LIFECYCLE_KEYWORDS = {**QUALITY_KEYWORDS, **PENALTY_KEYWORDS, **INVERSE_KEYWORDS, **ENGINE_KEYWORDS}


@door(LIFECYCLE_KEYWORDS)
@reports_hardware
def lifecycle(*, demand_tokens_per_s=50e6, period_days=60.0, hardware="h100-sxm", mfu=0.4, rl_tokens_ratio=2 / 3,
              infer=False, run=None, **kw) -> RecordResult:
    """Pre-training + RL + inference: the size that minimises the total $, or (``infer``) the inverse, or (``run``:
    a published training run) each phase's chip-hours, $ and MWh from the engine (answers/lifecycle_engine.py).
    The keywords LIFECYCLE_KEYWORDS build the penalties and the engine split's LifecycleRequest at once."""
    v = {**LIFECYCLE_KEYWORDS, **kw}
    target_loss, target_params, active_params, models_per_family = (
        v[k] for k in ("target_loss", "target_params", "active_params", "models_per_family"))
    for field, x in (("demand_tokens_per_s", demand_tokens_per_s), ("period_days", period_days),
                     ("target_loss", target_loss), ("target_params", target_params), ("rl_tokens_ratio",
                     rl_tokens_ratio), ("active_params", active_params), ("models_per_family", models_per_family)):
        inputs.optional(field, x)
    inputs.optional("mfu", mfu)
    pen = lc.Penalties(*(v[k] for k in PENALTY_KEYWORDS))
    if run is not None:
        from tokenomy.answers.lifecycle_engine import LifecycleRequest, engine_runs

        e = {k: v[k] for k in ENGINE_KEYWORDS}
        return _engine(LifecycleRequest(
            inputs.choice("run", run, engine_runs()), e["serve_hardware"], e["pretrain_tokens"], rl_tokens_ratio,
            e["prompt_len"], e["output_len"], e["rollout_concurrency"], demand_tokens_per_s, period_days, e["isl"],
            e["osl"], e["inference_concurrency"], pen))
    if infer:
        return _inverse(demand_tokens_per_s, period_days, active_params, pen, models_per_family)
    hw = hardware_of(hardware)
    _, peak = hw.chip.flops_for("bf16")
    u = float(lc.usd_per_flop(hw.usd_per_chip_hour, peak, mfu))
    L = float(target_loss if target_loss is not None else loss(target_params, chinchilla_tokens(target_params)))
    p, curve = lc.optimise(demand_tokens_per_s, period_days * SECONDS_PER_DAY, L, u,
                           rl_tokens_per_pretrain_token=rl_tokens_ratio, pen=pen)
    shares, naive = p.shares(), lc.ignoring_inference(curve)
    row = {"target_loss": L, "n_active_params": p.n_active, "d_pre": p.d_pre, "d_rl": p.d_rl, "d_inf": p.d_inf,
           "tokens_per_param": p.d_pre / p.n_active, "overtraining": p.overtraining,
           "pretraining_usd": p.usd_pre, "rl_usd": p.usd_rl, "inference_usd": p.usd_inf, "total_usd": p.usd_total,
           "pretraining_fraction": shares[0], "rl_fraction": shares[1], "inference_fraction": shares[2],
           "pretraining_flops": p.flops_pre, "rl_flops": p.flops_rl, "inference_flops": p.flops_inf,
           "usd_per_pretraining_flop": u, "hardware": hw.name,
           **lifecycle_mwh(power_of(hw), {"pretraining": p.flops_pre, "rl": p.flops_rl, "inference": p.flops_inf},
                           peak, mfu),
           "ignoring_inference_n_active_params": naive.n_active, "ignoring_inference_total_usd": naive.usd_total,
           "saving_fraction": 1 - p.usd_total / naive.usd_total}
    row = {k: (float(v) if isinstance(v, np.generic) else v) for k, v in row.items()}
    derivation = (
        f"[bold]quality target: Chinchilla loss L* = {L:.4f}; D_pre(N) = (B/(L* - E - A/N^alpha))^(1/beta)[/bold]",
        f"  chosen N_active = {fmt_si(p.n_active)} -> D_pre = {fmt_si(p.d_pre)} tokens "
        f"({p.d_pre / p.n_active:.3g} tokens/param; over-training D_pre/(20N) = {p.overtraining:.3g}x)",
        f"  C_pre = 6*N*D_pre = {fmt_si(p.flops_pre)}FLOP;  C_RL = {pen.rl_flops_factor:g}*N*D_RL*{pen.rl_penalty:g} "
        f"= {fmt_si(p.flops_rl)} (D_RL = {fmt_si(p.d_rl)});  C_inf = 2*N*D_inf*{pen.inference_penalty:g} = "
        f"{fmt_si(p.flops_inf)} (D_inf = {fmt_si(p.d_inf)})",
        f"  $ = C x ${u:.3g}/FLOP = ${fmt_si(p.usd_pre)} + ${fmt_si(p.usd_rl)} + ${fmt_si(p.usd_inf)} = "
        f"${fmt_si(p.usd_total)}; a smaller N needs more D_pre, a larger N costs more per inference token")
    note = (f"quality target: Chinchilla loss {L:.4f}; D_inf = {p.d_inf:.3g} tokens; priced on {hw.name} at MFU "
            f"{mfu:g}; ignoring inference would pick N = {naive.n_active:.3g} and cost ${naive.usd_total:.3g} "
            f"(--json for every term)")
    return RecordResult("lifecycle", "lifecycle: the size that minimises pre-training + RL + inference $", (row,),
                        ("n_active_params", "d_pre", "tokens_per_param", "overtraining", "pretraining_fraction",
                         "rl_fraction", "inference_fraction", "total_usd", "total_mwh", "saving_fraction"),
                        notes=(note,), derivation=derivation, rows_key="")


LIFECYCLE_ENGINE_COLUMNS = ("run", "d_pre", "d_rl", "d_inf", "pretraining_chip_hours", "rl_chip_hours",
                            "inference_chip_hours", "pretraining_fraction", "rl_fraction", "inference_fraction",
                            "total_usd", "total_mwh", "engine_inference_penalty")


def _engine(req) -> RecordResult:
    """The lifecycle split with every phase from the engine (answers/lifecycle_engine.py)."""
    from tokenomy.answers.lifecycle_engine import derivation, engine_split

    for field, v in (("pretrain_tokens", req.pretrain_tokens), ("prompt_len", req.prompt_len),
                     ("output_len", req.output_len), ("rollout_concurrency", req.rollout_concurrency),
                     ("isl", req.isl), ("osl", req.osl), ("inference_concurrency", req.inference_concurrency)):
        inputs.optional(field, v)
    try:
        hardware_of(req.serve_hardware)
    except ValueError as e:  # the catalog's refusal, named by the field it came through
        raise ValueError(f"serve_hardware: {str(e).removeprefix('hardware: ')}") from None
    row = engine_split(req)
    note = (f"{row['run']}: pre-training on its published layout ({row['train_hardware']}); RL rollouts and inference "
            f"served on {row['serve_hardware']} ({row['serve_plan']}); the lecture's constants on the same tokens "
            f"give {' / '.join(f'{100 * row[k]:.0f}%' for k in ('lecture_pretraining_fraction', 'lecture_rl_fraction', 'lecture_inference_fraction'))} "
            f"(--explain for the formulas, --json for every term)")
    return RecordResult("lifecycle", f"lifecycle (engine): {row['run']}'s pre-training, RL and inference, each from "
                        f"the engine", (row,), LIFECYCLE_ENGINE_COLUMNS, notes=(note,),
                        derivation=derivation(req, row), rows_key="")
