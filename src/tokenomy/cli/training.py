"""Training and lifecycle commands: train (a step, its memory, a run's time and $), rl, lifecycle."""

from __future__ import annotations

import numpy as np
import typer

from tokenomy.catalog import loader
from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.options import CSV, EXPLAIN, JSON
from tokenomy.cli.lifecycle import positive  # importing it also registers lifecycle and rl
from tokenomy.cli.render import emit, explain
from tokenomy.cli.training_explain import explain_train
from tokenomy.core.memory import SCHEDULES, STRATEGIES, overflow_message
from tokenomy.core.training import ATTENTION_CONVENTIONS, STEP_TERMS, TrainPlan, train_run, train_step
from tokenomy.econ.published import check_rows, run_names
from tokenomy.units import DTYPE_BYTES, SECONDS_PER_DAY, dtype_bytes

TRAIN_COLUMNS = ("global_batch", "chips", "step_s", "bound", "mfu", "bubble_fraction", "comm_exposed_s",
                 "memory_per_chip_bytes", "fits", "days", "chip_hours", "usd")


def _choice(opt: str, v: str, allowed) -> str:
    if v not in allowed:
        raise UsageError(f"--{opt}: {v!r}; allowed: {', '.join(allowed)}")
    return v


def _pick(x, i):
    a = np.ravel(x)
    v = a[min(i, a.size - 1)].item()
    return None if isinstance(v, float) and v != v else v  # NaN (a plan that does not fit) -> None


def train_rows(st, run, plan: TrainPlan) -> list[dict]:
    shape = np.shape(st.tokens_per_step)
    n = int(np.prod(shape)) if shape else 1
    rows = []
    for i in range(n):
        g = lambda x: _pick(np.broadcast_to(x, shape) if shape else x, i)  # noqa: E731
        fits = bool(g(st.fits))
        row = {"global_batch": int(g(np.asarray(plan.global_batch))), "chips": int(g(st.chips)),
               "dp": int(g(np.asarray(plan.dp))), "tp": int(plan.tp), "pp": int(plan.pp), "cp": int(plan.cp),
               "ep": int(plan.ep), "zero": int(plan.zero), "schedule": plan.schedule, "recompute": plan.recompute,
               "microbatches": g(st.microbatches), "tokens_per_step": g(st.tokens_per_step),
               "flops_per_token": g(st.flops.model), "n_active_params": g(st.flops.n_active),
               "model_flops": g(st.model_flops), "hardware_flops": g(st.hardware_flops),
               "compute_s": g(st.compute_s), "bubble_fraction": g(st.bubble_fraction), "bubble_s": g(st.bubble_s),
               "tp_s": g(st.tp_s), "ep_s": g(st.ep_s), "ep_exposed_s": g(st.ep_exposed_s), "cp_s": g(st.cp_s), "dp_s": g(st.dp_s), "pp_s": g(st.pp_s),
               "comm_s": g(st.comm_s), "comm_exposed_s": g(st.comm_exposed_s),
               "comm_overlapped_s": g(st.comm_s) - g(st.comm_exposed_s) if fits else None,
               "modelled_step_s": g(st.modelled_step_s), "implied_flops_fraction": g(st.implied_flops_fraction),
               "step_s": g(st.step_s),
               "bound": STEP_TERMS[int(g(st.bound))] if fits else None, "mfu_given": st.mfu_given,
               "tokens_per_s": g(st.tokens_per_s), "mfu": g(st.mfu)}
        mem = st.memory
        row.update({"weights_bytes": g(mem.weights_bytes), "gradients_bytes": g(mem.gradients_bytes),
                    "optimizer_bytes": g(mem.optimizer_bytes), "activations_bytes": g(mem.activations_bytes),
                    "memory_per_chip_bytes": g(mem.total_bytes), "hbm_bytes": g(mem.hbm_bytes), "fits": fits,
                    "why": None if fits else overflow_message(mem, i)})
        if run is not None:
            row.update({"tokens": g(run.tokens), "steps": g(run.steps), "days": g(run.time_s) / SECONDS_PER_DAY if fits
                        else None, "chip_hours": g(run.chip_hours), "usd": g(run.usd)})
        rows.append(row)
    return rows


@app.command("train")
@guarded
def train_cmd(
        model: str = typer.Option(None, "--model", help="Catalog name, config.json path, or directory."),
        hardware: str = typer.Option("h100-sxm", "--hardware", help="Chip or system (tokenomy hardware)."),
        dp: int = typer.Option(None, "--dp", help="Data parallel (default: chips / (tp*pp*cp))."),
        chips: int = typer.Option(None, "--chips", help="Total chips (default: the system's, or dp*tp*pp*cp)."),
        tp: int = typer.Option(1, "--tp", help="Tensor parallel (with sequence parallelism unless --no-sp)."),
        pp: int = typer.Option(1, "--pp", help="Pipeline stages."),
        cp: int = typer.Option(1, "--cp", help="Context parallel (ring attention)."),
        ep: int = typer.Option(1, "--ep", help="Expert parallel (ranks drawn from dp*cp)."),
        ep_overlap: float = typer.Option(0.0, "--ep-overlap", help="Share of compute hiding EP all-to-alls (0-1)."),
        zero: int = typer.Option(1, "--zero", help="ZeRO stage 0-3 (3 = FSDP)."),
        fsdp: bool = typer.Option(False, "--fsdp", help="Shorthand for --zero 3."),
        no_sp: bool = typer.Option(False, "--no-sp", help="Tensor parallel without sequence parallelism."),
        schedule: str = typer.Option("1f1b", "--schedule", help=f"One of {', '.join(SCHEDULES)}."),
        virtual_stages: int = typer.Option(1, "--virtual-stages", help="Model chunks per chip (interleaved)."),
        recompute: str = typer.Option("selective", "--recompute", help=f"One of {', '.join(STRATEGIES)}."),
        micro_batch: int = typer.Option(1, "--micro-batch", help="Sequences per micro-batch."),
        seq_len: int = typer.Option(4096, "--seq-len", help="Tokens per sequence."),
        global_batch: str = typer.Option("1024", "--global-batch", help="Sequences per step; comma list."),
        tokens: float = typer.Option(None, "--tokens", help="Train on this many tokens: time, chip-hours, $."),
        mfu: float = typer.Option(None, "--mfu", help="Use this MFU for the step time (else modelled)."),
        flops_fraction: float = typer.Option(1.0, "--flops-fraction", help="Achievable fraction of peak in matmuls."),
        attention: str = typer.Option("causal", "--attention", help="Attention FLOPs: full | causal | none."),
        compute_dtype: str = typer.Option("bf16", "--compute-dtype", help="Matmul dtype (sets the peak)."),
        weight_dtype: str = typer.Option("bf16", "--weight-dtype", help="Working weights dtype."),
        grad_dtype: str = typer.Option("bf16", "--grad-dtype", help="Gradient dtype."),
        optimizer_dtype: str = typer.Option("fp32", "--optimizer-dtype", help="Adam moments (and master copy)."),
        flash: bool = typer.Option(False, "--flash-attention", help="No s^2 scores stored (FlashAttention)."),
        dropout: bool = typer.Option(False, "--dropout", help="Store dropout masks (Korthikanti's setting)."),
        published: str = typer.Option(None, "--published", help="Check a published run (or 'all')."),
        as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """A training step: FLOPs, compute, communication, bubble, memory per chip; time and $ on --tokens.

    Examples: tokenomy train --model llama-3.1-70b --hardware h100-sxm --chips 1024 --tp 8 --pp 4 --seq-len 8192
    --global-batch 512 --tokens 15e12 --mfu 0.4;   tokenomy train --published all
    """
    if published:
        names = run_names() if published == "all" else [_choice("published", published, run_names() + ["all"])]
        rows = [r for r in check_rows() if r["run"] in names]
        emit(rows, as_json=as_json, as_csv=as_csv, title="published runs: chip-hours = FLOPs/(chips' peak x MFU)",
             columns=("run", "chips", "chip", "mfu", "attention", "model_flops", "predicted_chip_hours",
                      "published_chip_hours", "error_fraction", "throughput_error_fraction"))
        return
    if not model:
        raise UsageError("--model: required (or --published NAME)")
    for opt, v in (("compute-dtype", compute_dtype), ("weight-dtype", weight_dtype), ("grad-dtype", grad_dtype),
                   ("optimizer-dtype", optimizer_dtype)):
        _choice(opt, v, list(DTYPE_BYTES))
    _choice("schedule", schedule, SCHEDULES)
    _choice("recompute", recompute, STRATEGIES)
    _choice("attention", attention, ATTENTION_CONVENTIONS)
    positive("mfu", mfu, 1.0)
    positive("flops-fraction", flops_fraction, 1.0)
    positive("tokens", tokens)
    for opt, v in (("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep), ("virtual-stages", virtual_stages),
                   ("micro-batch", micro_batch), ("seq-len", seq_len)):
        if v < 1:
            raise UsageError(f"--{opt}: must be a positive integer, got {v}")
    if not 0 <= zero <= 3:
        raise UsageError(f"--zero: {zero}; allowed: 0, 1, 2, 3")
    m, hw = loader.model(model), loader.hardware(hardware)
    inner = tp * pp * cp
    if dp is None:
        total = chips or (hw.num_chips if hw.num_chips > 1 else inner)
        if total % inner:
            raise UsageError(f"--chips: {total} is not a multiple of tp*pp*cp = {inner}")
        dp = total // inner
    elif chips is not None and chips != dp * inner:
        raise UsageError(f"--chips: {chips} != dp*tp*pp*cp = {dp * inner}")
    if dp < 1:
        raise UsageError(f"--dp: must be a positive integer, got {dp}")
    plan = TrainPlan(dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, zero=3 if fsdp else zero, sp=not no_sp, schedule=schedule,
                     virtual_stages=virtual_stages, recompute=recompute, ep_overlap=ep_overlap, micro_batch=micro_batch, seq_len=seq_len,
                     global_batch=np.array(int_list("global-batch", global_batch)))
    opt_b = dtype_bytes(optimizer_dtype) * 2 + 4.0  # two Adam moments + an fp32 master copy
    st = train_step(m, hw, plan, mfu=mfu, flops_fraction=flops_fraction, attention=attention,
                    compute_dtype=compute_dtype, weight_bytes=dtype_bytes(weight_dtype),
                    grad_bytes=dtype_bytes(grad_dtype), optimizer_bytes=opt_b, act_bytes=2.0, dropout=dropout,
                    flash=flash)
    run = train_run(st, tokens, hw.usd_per_chip_hour) if tokens else None
    rows = train_rows(st, run, plan)
    if show and not (as_json or as_csv):
        for i in range(len(rows)):
            explain(explain_train(m, hw, plan, st, run, i) + ([f"  [red]{rows[i]['why']}[/red]"]
                                                               if not rows[i]["fits"] else []))
    title = (f"train: {m.name} on {rows[0]['chips']} x {hw.chip.name} (dp {dp}, tp {tp}, pp {pp}, cp {cp}, ep {ep}, "
             f"{schedule}, recompute {recompute}, seq {seq_len}; "
             f"{'MFU given' if mfu else f'modelled at {flops_fraction:g} of peak'})")
    notes = [f"[red]global batch {r['global_batch']}: {r['why']}[/red]" for r in rows if not r["fits"]]
    emit(rows, as_json=as_json, as_csv=as_csv, title=title,
         columns=[c for c in TRAIN_COLUMNS if run is not None or c not in ("days", "chip_hours", "usd")], notes=notes)
