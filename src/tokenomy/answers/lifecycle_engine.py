"""The lecture's lifecycle split re-asked with the engine (``tokenomy lifecycle --run NAME``): each phase's
chip-hours, dollars and MWh come from the answer that owns that phase, for a published training run
(catalog/training_runs/<run>.toml), instead of the lecture's FLOP constants (econ/lifecycle.py, §2.10).

    pre-training  chip-h_pre = the run's own layout through ``train`` for D_pre tokens
                  (answers/published_engine.engine_check: steps x step_s x chips / goodput); its $ and all-in MWh
    RL            D_RL = r x D_pre rollout tokens, each rollout P prompt + O generated tokens
                  generation: n = D_RL / (P + O) rollouts; chip-h = n / requests_per_s x chips / 3600 from ``serve``'s
                    steady state of the policy model (isl P, osl O, concurrency C_RL) on the serving system
                  training on them: every rollout token forward + backward (the lecture's factor 6) at the
                    pre-training layout's rate: engine_check(run, tokens = D_RL)
    inference     D_inf = demand x period; n = D_inf / (isl + osl) requests;
                  chip-h = n / requests_per_s x chips / 3600 from ``serve`` at (isl, osl, concurrency)
    $   = chip-h x the chip's $/chip-hour (training: the run's hardware; serving: the serving system's)
    MWh = serving: chip-h x serve's all-in W per chip / 1e6; training: train's all-in MWh of the steps
    split = each phase's $ / total $ (also given in chip-hours and MWh)

Inputs and where they come from: D_pre = the run's trained tokens (its catalog file, cited) unless given;
r = 2/3 (the lecture's clean version D_pre = 1.5 D_RL, an assumption); P, O = 1,024 and 8,192 (an assumption:
reasoning rollouts); D_inf = 50 M tokens/s per model for 60 days = 2.59e14 (lecture L11-L12, "divide by ~10 for a
family"; an assumption); isl, osl 1,024 each, 256 users at once (a loaded server: the lecture's batch argument,
§2.1) and the serving system (an HGX H200, which holds either run's model): assumptions. Every one is an option.
The lecture's constants on the same tokens (``lecture_*_fraction``): 6·D_pre : f·p_RL·D_RL : 2·p_inf·D_inf
(N cancels), so the engine's split and the lecture's can be read side by side; and the engine's own constants,
in $ per FLOP of the lecture's count against pre-training's:
    f·p_RL (engine) = ($_RL / D_RL) / ($_pre / (6·D_pre))      (the lecture: 3 x 3 = 9)
    p_inf  (engine) = ($_inf / (2·D_inf)) / ($_pre / (6·D_pre)) (the lecture: 3)
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenomy.answers.resolve import hardware_of
from tokenomy.econ.lifecycle import STAGES, Penalties
from tokenomy.econ.published import load_run, run_names
from tokenomy.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, fmt_si


@dataclass(frozen=True)
class LifecycleRequest:
    """What the engine split needs (module docstring); pretrain_tokens None = the run's published tokens."""

    run: str
    serve_hardware: str = "hgx-h200-8"
    pretrain_tokens: float | None = None
    rl_tokens_ratio: float = 2 / 3
    prompt_len: int = 1024
    output_len: int = 8192
    rollout_concurrency: float = 256
    demand_tokens_per_s: float = 50e6
    period_days: float = 60.0
    isl: int = 1024
    osl: int = 1024
    inference_concurrency: float = 256
    pen: Penalties = Penalties()


def engine_runs() -> list[str]:
    """The published runs that state their layout (what ``run`` may name)."""
    from tokenomy.answers.published_engine import layout_of

    return [n for n in run_names() if layout_of(n) is not None]


def _trained(run: str, tokens: float) -> dict:
    """chip-h, $ and MWh of training ``tokens`` on the run's own layout (the engine's answer, published_engine)."""
    from tokenomy.answers.published_engine import engine_check

    e = engine_check(run, tokens)
    return {"chip_hours": e["engine_chip_hours"], "usd": e["usd"], "mwh": e["mwh_training"], "hardware": e["hardware"],
            "mfu": e["mfu"]}


def _served(req: LifecycleRequest, model: str, tokens: float, isl: int, osl: int, concurrency: float) -> dict:
    """chip-h, $ and MWh of serving ``tokens`` (prompt + output) as requests of isl + osl tokens at ``concurrency``:
    serve's steady state (answers/workloads.serve), its requests/s, chips and all-in W per chip."""
    from tokenomy.answers.workloads import serve

    r = serve(model, req.serve_hardware, isl=isl, osl=osl, concurrency=concurrency).rows()[0]
    chip_h = tokens / (isl + osl) / r["requests_per_s"] * r["chips"] / SECONDS_PER_HOUR
    usd = chip_h * hardware_of(req.serve_hardware).usd_per_chip_hour
    return {"chip_hours": chip_h, "usd": usd, "mwh": chip_h * r["all_in_w_per_chip"] / 1e6, "plan": r["plan"],
            "chips": r["chips"], "tokens_per_s_per_chip": r["total_tokens_per_s_per_chip"]}


def lecture_fractions(d_pre: float, d_rl: float, d_inf: float, pen: Penalties) -> tuple[float, float, float]:
    """The lecture's split on the same tokens: 6·D_pre : f·p_RL·D_RL : 2·p_inf·D_inf (N_active cancels)."""
    c = (6 * d_pre, pen.rl_flops_factor * pen.rl_penalty * d_rl, 2 * pen.inference_penalty * d_inf)
    return tuple(x / sum(c) for x in c)


def engine_split(req: LifecycleRequest) -> dict:
    """One record: tokens, chip-hours, $ and MWh of each phase, their shares, the lecture's shares (module doc)."""
    run = load_run(req.run)
    d_pre = run.tokens if req.pretrain_tokens is None else float(req.pretrain_tokens)
    d_rl = req.rl_tokens_ratio * d_pre
    d_inf = req.demand_tokens_per_s * req.period_days * SECONDS_PER_DAY
    pre = _trained(run.name, d_pre)
    gen = _served(req, run.model, d_rl, req.prompt_len, req.output_len, req.rollout_concurrency)
    rl_train = _trained(run.name, d_rl)
    inf = _served(req, run.model, d_inf, req.isl, req.osl, req.inference_concurrency)
    rl = {k: gen[k] + rl_train[k] for k in ("chip_hours", "usd", "mwh")}
    phases = dict(zip(STAGES, (pre, rl, inf)))
    row = {"run": run.name, "model": run.model, "train_hardware": pre["hardware"], "serve_hardware": hardware_of(req.serve_hardware).name,
           "serve_plan": inf["plan"], "d_pre": d_pre, "d_rl": d_rl, "d_inf": d_inf,
           "rl_generated_tokens": d_rl * req.output_len / (req.prompt_len + req.output_len),
           "pretraining_mfu": pre["mfu"], "rl_generation_chip_hours": gen["chip_hours"],
           "rl_training_chip_hours": rl_train["chip_hours"], "rl_generation_usd": gen["usd"],
           "rl_training_usd": rl_train["usd"], "rollout_tokens_per_s_per_chip": gen["tokens_per_s_per_chip"],
           "inference_tokens_per_s_per_chip": inf["tokens_per_s_per_chip"]}
    for unit in ("chip_hours", "usd", "mwh"):
        total = sum(p[unit] for p in phases.values())
        row.update({f"{s}_{unit}": p[unit] for s, p in phases.items()})
        row[f"total_{unit}"] = total
        suffix = "" if unit == "usd" else f"_{unit}"
        row.update({f"{s}_fraction{suffix}": p[unit] / total for s, p in phases.items()})
    usd_per_pre_flop = pre["usd"] / (6 * d_pre)  # per parameter: N cancels in both ratios
    row["engine_rl_flops_penalty"] = rl["usd"] / d_rl / usd_per_pre_flop
    row["engine_inference_penalty"] = inf["usd"] / (2 * d_inf) / usd_per_pre_flop
    lec = lecture_fractions(d_pre, d_rl, d_inf, req.pen)
    row.update({f"lecture_{s}_fraction": f for s, f in zip(STAGES, lec)})
    return row


def derivation(req: LifecycleRequest, row: dict) -> tuple[str, ...]:
    """The split's formulas with the numbers plugged in (``--explain``)."""
    P, O = req.prompt_len, req.output_len
    return (
        f"[bold]{row['run']}: D_pre = {fmt_si(row['d_pre'])} tokens, D_RL = {req.rl_tokens_ratio:.3g} x D_pre = "
        f"{fmt_si(row['d_rl'])}, D_inf = {req.demand_tokens_per_s:g} tok/s x {req.period_days:g} d = "
        f"{fmt_si(row['d_inf'])}[/bold]",
        f"  pre-training: the run's layout through train on {row['train_hardware']} (MFU "
        f"{100 * row['pretraining_mfu']:.1f}%): {fmt_si(row['pretraining_chip_hours'])} chip-h, "
        f"${fmt_si(row['pretraining_usd'])}, {row['pretraining_mwh']:.4g} MWh",
        f"  RL generation: D_RL/({P}+{O}) rollouts served on {row['serve_hardware']} at concurrency "
        f"{req.rollout_concurrency:g} ({fmt_si(row['rollout_tokens_per_s_per_chip'])} tok/s/chip): "
        f"{fmt_si(row['rl_generation_chip_hours'])} chip-h, ${fmt_si(row['rl_generation_usd'])}",
        f"  RL training: D_RL forward + backward at the pre-training layout's rate: "
        f"{fmt_si(row['rl_training_chip_hours'])} chip-h, ${fmt_si(row['rl_training_usd'])}",
        f"  inference: D_inf/({req.isl}+{req.osl}) requests served on {row['serve_hardware']} ({row['serve_plan']}) at "
        f"concurrency {req.inference_concurrency:g} ({fmt_si(row['inference_tokens_per_s_per_chip'])} tok/s/chip): "
        f"{fmt_si(row['inference_chip_hours'])} chip-h, ${fmt_si(row['inference_usd'])}",
        f"  split ($): {_pct(row, '')};  chip-hours: {_pct(row, '_chip_hours')};  MWh: {_pct(row, '_mwh')}",
        f"  the lecture's constants on the same tokens (6*D_pre : {req.pen.rl_flops_factor:g}*{req.pen.rl_penalty:g}"
        f"*D_RL : 2*{req.pen.inference_penalty:g}*D_inf): "
        + " / ".join(f"{100 * row[f'lecture_{s}_fraction']:.1f}%" for s in STAGES),
        f"  the engine's constants: f*p_RL = ($_RL/D_RL)/($_pre/(6*D_pre)) = {row['engine_rl_flops_penalty']:.3g} "
        f"(lecture {req.pen.rl_flops_factor * req.pen.rl_penalty:g}); p_inf = ($_inf/(2*D_inf))/($_pre/(6*D_pre)) = "
        f"{row['engine_inference_penalty']:.3g} (lecture {req.pen.inference_penalty:g})")


def _pct(row: dict, suffix: str) -> str:
    return " / ".join(f"{100 * row[f'{s}_fraction{suffix}']:.1f}%" for s in STAGES)
