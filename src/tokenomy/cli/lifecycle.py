"""lifecycle and rl commands: parse the options, call answers.life.lifecycle and answers.training.rl, render."""

from __future__ import annotations

import typer

from tokenomy.cli.app import app, guarded
from tokenomy.cli.options import CSV, EXPLAIN, JSON, SET, what_if
from tokenomy.cli.render import show_result
from tokenomy.cli.render import emit, explain


def show_record(res, *, as_json: bool, as_csv: bool, show: bool = False) -> None:
    """A one-record answer: the JSON payload, one CSV row (lists joined with ':'), or a field/value table + notes."""
    if as_json:
        return show_result(res, as_json=True, as_csv=as_csv)
    if show and not as_csv:
        explain(res.explain())
    row = res.payload()
    if as_csv:
        row = {k: ":".join(f"{x:.4g}" if isinstance(x, (int, float)) else str(x) for x in v) if isinstance(v, list)
               else v for k, v in row.items()}
    emit(row, as_json=False, as_csv=as_csv, title=res.title, notes=res.notes)


@app.command("lifecycle")
@guarded
def lifecycle_cmd(
        demand_tokens_per_s: float = typer.Option(50e6, "--demand-tokens-per-s", help="Expected inference tokens/s."),
        period_days: float = typer.Option(60.0, "--period-days", help="Deployment period in days."),
        target_loss: float = typer.Option(None, "--target-loss", help="Quality: Chinchilla loss (nats/token)."),
        target_params: float = typer.Option(
            1e11, "--target-params", help="Quality: as good as a Chinchilla-trained (20 tok/param) model this size."),
        hardware: str = typer.Option("h100-sxm", "--hardware", help="Chip or system that prices a FLOP."),
        set_: str = SET,
        mfu: float = typer.Option(0.4, "--mfu", help="Pre-training MFU (RL and inference: divided by the penalties)."),
        rl_tokens_ratio: float = typer.Option(2 / 3, "--rl-tokens-ratio", help="RL tokens per pre-training token."),
        rl_flops_factor: float = typer.Option(3.0, "--rl-flops-factor", help="FLOPs per param per RL token, 2..6."),
        rl_penalty: float = typer.Option(3.0, "--rl-penalty", help="RL efficiency penalty vs pre-training."),
        inference_penalty: float = typer.Option(3.0, "--inference-penalty", help="Inference efficiency penalty."),
        infer: bool = typer.Option(False, "--infer", help="Inverse: pre-training tokens from inference volume."),
        active_params: float = typer.Option(1e11, "--active-params", help="--infer: the model's N_active."),
        models_per_family: float = typer.Option(1.0, "--models-per-family", help="--infer: split the demand."),
        run: str = typer.Option(None, "--run", help="A published training run (tokenomy train --published all): "
                                "each phase's chip-hours, $ and MWh from the engine instead of the FLOP constants."),
        serve_hardware: str = typer.Option("hgx-h200-8", "--serve-hardware",
                                           help="--run: the system that generates rollouts and serves inference."),
        pretrain_tokens: float = typer.Option(None, "--pretrain-tokens",
                                              help="--run: pre-training tokens (default: the run's published count)."),
        prompt_len: int = typer.Option(1024, "--prompt-len", help="--run: prompt tokens per RL rollout."),
        output_len: int = typer.Option(8192, "--output-len", help="--run: generated tokens per RL rollout."),
        rollout_concurrency: float = typer.Option(256, "--rollout-concurrency",
                                                  help="--run: rollouts generated at once."),
        isl: int = typer.Option(1024, "--isl", help="--run: input tokens per inference request."),
        osl: int = typer.Option(1024, "--osl", help="--run: output tokens per inference request."),
        inference_concurrency: float = typer.Option(256, "--inference-concurrency",
                                                    help="--run: inference users served at once."),
        as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """Pre-training + RL + inference cost: the model size and tokens that minimise it, or (--infer) the inverse, or
    (--run) a published run's three phases each from the engine (train on its layout, serve for rollouts and
    inference).

    Examples: tokenomy lifecycle --demand-tokens-per-s 5e7 --period-days 60 --target-params 1e12;
    tokenomy lifecycle --infer --demand-tokens-per-s 5e8 --models-per-family 10 --active-params 1e11 --explain;
    tokenomy lifecycle --run llama-3.1-405b --serve-hardware hgx-b200-8 --explain
    """
    from tokenomy.answers.life import lifecycle

    engine = {  # --run's engine keywords, checked by the answer's door whether or not --run is given (as /api does)
        "run": run, "serve_hardware": what_if(serve_hardware, set_), "pretrain_tokens": pretrain_tokens,
        "prompt_len": prompt_len, "output_len": output_len, "rollout_concurrency": rollout_concurrency, "isl": isl,
        "osl": osl, "inference_concurrency": inference_concurrency}
    res = lifecycle(demand_tokens_per_s=demand_tokens_per_s, period_days=period_days, target_loss=target_loss,
              target_params=target_params, hardware=what_if(hardware, set_), mfu=mfu, rl_tokens_ratio=rl_tokens_ratio,
              rl_flops_factor=rl_flops_factor, rl_penalty=rl_penalty, inference_penalty=inference_penalty,
              infer=infer, active_params=active_params, models_per_family=models_per_family, **engine)
    show_record(res, as_json=as_json, as_csv=as_csv, show=show)


@app.command("rl")
@guarded
def rl_cmd(model: str = typer.Option(..., "--model", help="Catalog name, config.json path, or directory."),
           hardware: str = typer.Option(..., "--hardware", help="Chip or system that serves and trains."),
           set_: str = SET,
           chips: int = typer.Option(None, "--chips", help="Chips (default: the system's)."),
           rollouts: int = typer.Option(1024, "--rollouts", help="Rollouts per RL step."),
           prompt_len: int = typer.Option(1024, "--prompt-len", help="Prompt tokens per rollout."),
           output_len: int = typer.Option(8192, "--output-len", help="Generated tokens per rollout."),
           batch: str = typer.Option("16,64,256", "--batch", help="Concurrent rollouts; comma list."),
           flops_factor: float = typer.Option(6.0, "--flops-factor", help="2 (score only) .. 6 (train all)."),
           train_mfu: float = typer.Option(0.4, "--train-mfu", help="MFU of the training part."),
           weight_dtype: str = typer.Option(None, "--weight-dtype", help="Serving weight dtype override."),
           as_json: bool = JSON, as_csv: bool = CSV) -> None:
    """One RL step: rollouts priced with the pass engine, then training on them; tokens and $ per step.

    Example: tokenomy rl --model llama-3.1-70b --hardware hgx-h100-8 --rollouts 1024 --output-len 8192
    """
    from tokenomy.answers.training import rl

    res = rl(model=model, hardware=what_if(hardware, set_), chips=chips, rollouts=rollouts, prompt_len=prompt_len,
              output_len=output_len, batch=batch, flops_factor=flops_factor, train_mfu=train_mfu,
              weight_dtype=weight_dtype)
    show_result(res, as_json=as_json, as_csv=as_csv)
