"""lifecycle (pre-training + RL + inference: the size that minimises the total, and the inverse) and rl."""

from __future__ import annotations

import numpy as np
import typer

from tokenomy.catalog import loader
from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.options import CSV, EXPLAIN, JSON
from tokenomy.cli.render import emit, explain
from tokenomy.cli.training_explain import explain_inverse, explain_lifecycle
from tokenomy.econ import lifecycle as lc
from tokenomy.econ.rl import rl_step
from tokenomy.econ.scaling import chinchilla_tokens, loss
from tokenomy.units import SECONDS_PER_DAY



def positive(opt: str, v: float | None, upper: float | None = None) -> None:
    """--opt must be a finite number > 0 (and <= upper); else a one-line usage error."""
    if v is not None and not (v > 0 and np.isfinite(v) and (upper is None or v <= upper)):
        raise UsageError(f"--{opt}: must be a positive number{f' <= {upper:g}' if upper else ''}, got {v}")


@app.command("lifecycle")
@guarded
def lifecycle_cmd(
        demand: float = typer.Option(50e6, "--demand-tokens-per-s", help="Expected inference tokens/s."),
        period_days: float = typer.Option(60.0, "--period-days", help="Deployment period in days."),
        target_loss: float = typer.Option(None, "--target-loss", help="Quality: Chinchilla loss (nats/token)."),
        target_params: float = typer.Option(
            1e11, "--target-params", help="Quality: as good as a Chinchilla-trained (20 tok/param) model this size."),
        hardware: str = typer.Option("h100-sxm", "--hardware", help="Chip or system that prices a FLOP."),
        mfu: float = typer.Option(0.4, "--mfu", help="Pre-training MFU (RL and inference: divided by the penalties)."),
        rl_ratio: float = typer.Option(2 / 3, "--rl-tokens-ratio", help="RL tokens per pre-training token."),
        rl_flops_factor: float = typer.Option(3.0, "--rl-flops-factor", help="FLOPs per param per RL token, 2..6."),
        rl_penalty: float = typer.Option(3.0, "--rl-penalty", help="RL efficiency penalty vs pre-training."),
        inference_penalty: float = typer.Option(3.0, "--inference-penalty", help="Inference efficiency penalty."),
        infer: bool = typer.Option(False, "--infer", help="Inverse: pre-training tokens from inference volume."),
        active_params: float = typer.Option(1e11, "--active-params", help="--infer: the model's N_active."),
        models_per_family: float = typer.Option(1.0, "--models-per-family", help="--infer: split the demand."),
        as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """Pre-training + RL + inference cost: the model size and tokens that minimise it, or (--infer) the inverse.

    Examples: tokenomy lifecycle --demand-tokens-per-s 5e7 --period-days 60 --target-params 1e12;
    tokenomy lifecycle --infer --demand-tokens-per-s 5e8 --models-per-family 10 --active-params 1e11 --explain
    """
    for opt, v in (("demand-tokens-per-s", demand), ("period-days", period_days), ("target-loss", target_loss),
                   ("target-params", target_params), ("mfu", mfu), ("rl-tokens-ratio", rl_ratio),
                   ("active-params", active_params), ("models-per-family", models_per_family)):
        positive(opt, v)
    positive("mfu", mfu, 1.0)
    pen = lc.Penalties(rl_flops_factor, rl_penalty, inference_penalty)
    if infer:
        r = lc.infer_from_inference(demand, period_days, active_params, pen, models_per_family)
        row = {"tokens_per_s": demand / models_per_family, "period_days": period_days, "d_inf": r.d_inf,
               "d_pre": r.d_pre, "d_rl": r.d_rl, "n_active_params": active_params, "d_chinchilla": r.d_chinchilla,
               "overtraining": r.overtraining, "ratio_pre_rl_inf": list(r.ratio)}
        if show and not (as_json or as_csv):
            explain(explain_inverse(r, pen))
        if as_csv:
            row["ratio_pre_rl_inf"] = ":".join(f"{x:.4g}" for x in r.ratio)
        emit(row, as_json=as_json, as_csv=as_csv, title="lifecycle (inverse): equal pre-training, RL, inference cost",
             columns=list(row))
        return
    hw = loader.hardware(hardware)
    _, peak = hw.chip.flops_for("bf16")
    u = float(lc.usd_per_flop(hw.usd_per_chip_hour, peak, mfu))
    L = float(target_loss if target_loss is not None else loss(target_params, chinchilla_tokens(target_params)))
    p, curve = lc.optimise(demand, period_days * SECONDS_PER_DAY, L, u, rl_tokens_per_pretrain_token=rl_ratio,
                           pen=pen)
    shares, naive = p.shares(), lc.ignoring_inference(curve)
    row = {"target_loss": L, "n_active_params": p.n_active, "d_pre": p.d_pre, "d_rl": p.d_rl, "d_inf": p.d_inf,
           "tokens_per_param": p.d_pre / p.n_active, "overtraining": p.overtraining,
           "pretraining_usd": p.usd_pre, "rl_usd": p.usd_rl, "inference_usd": p.usd_inf, "total_usd": p.usd_total,
           "pretraining_fraction": shares[0], "rl_fraction": shares[1], "inference_fraction": shares[2],
           "pretraining_flops": p.flops_pre, "rl_flops": p.flops_rl, "inference_flops": p.flops_inf,
           "usd_per_pretraining_flop": u, "hardware": hw.name,
           "ignoring_inference_n_active_params": naive.n_active, "ignoring_inference_total_usd": naive.usd_total,
           "saving_fraction": 1 - p.usd_total / naive.usd_total}
    row = {k: (float(v) if isinstance(v, np.generic) else v) for k, v in row.items()}
    if show and not (as_json or as_csv):
        explain(explain_lifecycle(p, pen, L, u))
    emit(row, as_json=as_json, as_csv=as_csv,
         title="lifecycle: the size that minimises pre-training + RL + inference $",
         columns=("n_active_params", "d_pre", "tokens_per_param", "overtraining", "pretraining_fraction",
                  "rl_fraction", "inference_fraction", "total_usd", "saving_fraction"),
         notes=[f"quality target: Chinchilla loss {L:.4f}; D_inf = {p.d_inf:.3g} tokens; priced on {hw.name} at "
                f"MFU {mfu:g}; ignoring inference would pick N = {naive.n_active:.3g} and cost "
                f"${naive.usd_total:.3g} (--json for every term)"])


@app.command("rl")
@guarded
def rl_cmd(model: str = typer.Option(..., "--model", help="Catalog name, config.json path, or directory."),
           hardware: str = typer.Option(..., "--hardware", help="Chip or system that serves and trains."),
           chips: int = typer.Option(None, "--chips", help="Chips (default: the system's)."),
           rollouts: int = typer.Option(1024, "--rollouts", help="Rollouts per RL step."),
           prompt_len: int = typer.Option(1024, "--prompt-len", help="Prompt tokens per rollout."),
           output_len: int = typer.Option(8192, "--output-len", help="Generated tokens per rollout."),
           batch: str = typer.Option("16,64,256", "--batch", help="Concurrent rollouts; comma list."),
           flops_factor: float = typer.Option(6.0, "--flops-factor", help="2 (score only) .. 6 (train all)."),
           train_mfu: float = typer.Option(0.4, "--train-mfu", help="MFU of the training part."),
           weight_dtype: str = typer.Option(None, "--weight-dtype", help="Serving weight dtype override."),
           as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """One RL step: rollouts priced with the decode engine, then training on them; tokens and $ per step.

    Example: tokenomy rl --model llama-3.1-70b --hardware hgx-h100-8 --rollouts 1024 --output-len 8192
    """
    for opt, v in (("rollouts", rollouts), ("prompt-len", prompt_len), ("output-len", output_len),
                   ("train-mfu", train_mfu)):
        positive(opt, v)
    if chips is not None and chips < 1:
        raise UsageError(f"--chips: must be a positive integer, got {chips}")
    m, hw = loader.model(model), loader.hardware(hardware)
    B = np.array(int_list("batch", batch), dtype=float)
    r = rl_step(m, hw, rollouts=rollouts, prompt_len=prompt_len, output_len=output_len, batch=B, chips=chips,
                flops_factor=flops_factor, train_mfu=train_mfu, weight_dtype=weight_dtype)
    keys = ("rollout_s", "rollout_tokens_per_s", "rollout_usd", "train_s", "train_usd", "usd",
            "usd_per_generated_mtok", "effective_mfu", "efficiency_penalty", "fits")
    rows = []
    for i, b in enumerate(B):
        row = {"batch": int(b), "tokens_per_step": float(r.tokens_per_step), "train_flops": float(r.train_flops)}
        for k in keys:
            v = np.ravel(np.broadcast_to(getattr(r, k), B.shape))[i].item()
            row[k] = bool(v) if k == "fits" else (None if v != v else v)
        rows.append(row)
    emit(rows, as_json=as_json, as_csv=as_csv, title=f"rl step: {m.name} on {hw.name}",
         columns=("batch", "tokens_per_step", "rollout_s", "train_s", "usd", "usd_per_generated_mtok",
                  "effective_mfu", "efficiency_penalty", "fits"),
         notes=[f"[red]batch {row['batch']}: rollouts do not fit in HBM[/red]" for row in rows if not row["fits"]])
