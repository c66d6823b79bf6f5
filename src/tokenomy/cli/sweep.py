"""tokenomy sweep: the one engine over named axes (comma lists), streamed to a file, on this machine or a dask
cluster, with an HTML page of the Pareto fronts; a thin layer over answers.sweeps."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from tokenomy.cli.app import UsageError, app, as_option, guarded
from tokenomy.cli.options import what_if

LIST = "comma list"
MAX_PRINTED = 100_000


def _words(name: str, text: str | None) -> list[str] | None:
    if text is None:
        return None
    out = [x.strip() for x in text.split(",") if x.strip()]
    if not out:
        raise UsageError(f"--{name}: empty; give at least one value")
    return out


def _client(address: str | None):
    if address is None:
        return None
    if not address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        raise UsageError(f"--dask: {address!r} must be a scheduler address, e.g. tcp://host:8786")
    from distributed import Client

    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError) as e:
        raise UsageError(f"--dask: no scheduler at {address} ({type(e).__name__})") from None


def _plot(path: str, fronts, serving: bool) -> None:
    import plotly.io as pio

    from tokenomy.plots.sweep import pareto_figure

    x, y = fronts.x_name, fronts.y_name
    title = ("sweep: $/Mtok vs TTFT (Pareto fronts)" if serving else
             "sweep: tokens/s per chip vs tokens/s per user (Pareto fronts)")
    fig = pareto_figure(fronts.rows(), x, y, title)
    with open(path, "w", encoding="utf-8") as f:
        f.write(pio.to_html(fig, include_plotlyjs=True, full_html=True, validate=False))


def _summary(spec, ds_or_path, counts, n_chunks) -> str:
    from tokenomy.answers.sweep_eval import REASONS

    total = spec.grid.size
    valid = counts.get(0, 0)
    dims = " x ".join(f"{n} {len(v)}" for n, v in zip(spec.grid.names, spec.grid.values) if len(v) > 1) or "1 point"
    lines = [f"sweep: {dims} = {total:,} points in {n_chunks} chunk(s); {valid:,} valid and fitting"]
    lines += [f"  {n:,} x {REASONS[c]}" for c, n in sorted(counts.items()) if c]
    if not hasattr(ds_or_path, "data_vars"):
        lines.append(f"written: {ds_or_path}")
    return "\n".join(lines)


@app.command("sweep")
@guarded
def sweep_cmd(model: str = typer.Option(..., "--model", help=f"Catalog model names, {LIST}."),
              hardware: str = typer.Option(..., "--hardware", help=f"Chip or system names, {LIST}."),
              set_: str = typer.Option(None, "--set", help="What-if hardware, applied to every --hardware: "
                                       "field=value[,...] (SI units or a multiplier x2; see tokenomy decode --help)."),
              kind: str = typer.Option(None, "--kind", help="decode | prefill (comma list; default decode)."),
              weight_dtype: str = typer.Option(None, "--weight-dtype", help="Weight dtypes (checkpoint = its own)."),
              kv_dtype: str = typer.Option(None, "--kv-dtype", help="KV dtypes (default bf16; serving: auto, the "
                                           "engine's for the weights)."),
              efficiency: str = typer.Option(None, "--efficiency", help="calibrated | roofline (default calibrated)."),
              chips: str = typer.Option(None, "--chips", help="plan: chip budgets (default: the system's)."),
              tp: str = typer.Option(None, "--tp", help="Tensor-parallel degrees (none given: best layout per point)."),
              ep: str = typer.Option(None, "--ep", help="Expert-parallel degrees."),
              pp: str = typer.Option(None, "--pp", help="Pipeline stages."),
              dp: str = typer.Option(None, "--dp", help="Data-parallel replicas."),
              batch: str = typer.Option(None, "--batch", help="Batches, e.g. 1,8,64 or 1..4096 (powers of two)."),
              context: str = typer.Option(None, "--context", help="Contexts, e.g. 2k,32k,128k, 1k..1M (powers of two) "
                                           "or 1k..1M:256log (256 log-spaced)."),
              len_pass: str = typer.Option(None, "--len-pass", help="prefill: new tokens per sequence."),
              concurrency: str = typer.Option(None, "--concurrency", help="Serving, closed loop: users."),
              rate: str = typer.Option(None, "--rate", help="Serving, open loop: requests/s."),
              isl: str = typer.Option(None, "--isl", help="Serving: input tokens per request."),
              osl: str = typer.Option(None, "--osl", help="Serving: output tokens per request."),
              engine: str = typer.Option("vllm", "--engine", help="Serving: vllm | sglang | trtllm."),
              workload: str = typer.Option(None, "--workload", help="Sessions: multiturn | agentic (a session sweep "
                                           "over --concurrency or --rate, --think-s, --dram-bytes, --nvme-bytes)."),
              turns: str = typer.Option(None, "--turns", help="Sessions: turns of a session's main agent."),
              think_s: str = typer.Option(None, "--think-s", help="Sessions: think times between turns, s (a list)."),
              kv_tiering: str = typer.Option(None, "--kv-tiering", help="Sessions: the tiered KV cache policy "
                                             "(catalog/kv_tiering: lmcache, ...); default HBM only."),
              dram_bytes: str = typer.Option(None, "--dram-bytes", help="Sessions: host DRAM per node for the KV "
                                             "tier, bytes (a list)."),
              nvme_bytes: str = typer.Option(None, "--nvme-bytes", help="Sessions: local NVMe per node for the KV "
                                             "tier, bytes (a list; 0: none)."),
              out: str = typer.Option(None, "--out", help="Stream to a .parquet, .csv or .nc file (with --dask and "
                                      ".parquet: a new folder of parts, one per chunk, written by the workers)."),
              vars_: str = typer.Option(None, "--vars", help="Only these output variables (comma list; reason is "
                                        "always kept), e.g. step_s,tokens_per_s_per_chip: smaller files, less memory."),
              plot: str = typer.Option(None, "--plot", help="Write an HTML page of the Pareto fronts."),
              dask: str = typer.Option(None, "--dask", help="Evaluate on a dask scheduler, e.g. tcp://host:8786."),
              chunk_points: int = typer.Option(None, "--chunk-points", help="Points per chunk (default 262144)."),
              as_csv: bool = typer.Option(False, "--csv", help="Print every point as CSV (small sweeps).")) -> None:
    """Sweep the one engine over named axes: every combination of the comma lists, evaluated in chunks.

    Example: tokenomy sweep --model llama-3.1-70b,qwen3-32b --hardware hgx-h100-8 --tp 1,2,4,8 --batch 1..4096
    --context 2k,32k --out sweep.parquet --plot sweep.html

    Plan per point (no degrees): tokenomy sweep --model kimi-k2-instruct --hardware gb200-nvl72 --chips 1152
    --batch 1..4096 --context 8k

    Serving: tokenomy sweep --model llama-3.1-8b --hardware h100-sxm --concurrency 1,4,16,64,256 --isl 1k,8k --osl 1k

    On a cluster: tokenomy sweep ... --out big.parquet --dask tcp://scheduler:8786 (the workers write big.parquet/
    part-*.parquet; pandas.read_parquet reads the folder as one table)

    A billion points (4 x 65,536 x 4,096): tokenomy sweep --model llama-3.1-8b --hardware hgx-h100-8 --tp 1,2,4,8
    --batch 1..65536:1 --context 1k..1M:4096log --vars step_s --out big.parquet --dask tcp://scheduler:8786
    """
    from tokenomy.answers.sweeps import CHUNK_POINTS, chunks, run, spec_of
    from tokenomy.answers.sweep_front import AXES_OF
    from tokenomy.answers.sweep_tally import Tally

    sessions = dict(workload=workload, turns=turns, think_s=think_s, kv_tiering=kv_tiering, dram_bytes=dram_bytes,
                    nvme_bytes=nvme_bytes)
    if workload not in (None, "steady"):  # what tk.sweep's session sweep does not read, tk refuses by name
        passes = dict(kind=kind, weight_dtype=weight_dtype, kv_dtype=kv_dtype, efficiency=efficiency, batch=batch,
                      context=context, len_pass=len_pass, isl=isl, osl=osl, variables=vars_,
                      chunk_points=chunk_points, client=dask)
        return _session_sweep(dict(model=model, hardware=hardware, chips=chips, tp=tp, ep=ep, pp=pp, dp=dp,
                                   concurrency=concurrency, rate=rate, engine=engine, **sessions, **passes),
                              next((k for k, v in {"--set": set_, "--plot": plot}.items() if v is not None), None),
                              out, as_csv)
    given = next((k for k, v in sessions.items() if v is not None and k != "workload"), None)
    if given is not None:
        raise UsageError(f"--{given.replace('_', '-')}: a session sweep's axis; give --workload multiturn or agentic")

    hw = _words("hardware", hardware)
    hw = hw if set_ is None else [what_if(h, set_) for h in hw]
    axes = dict(model=_words("model", model), hardware=hw, kind=_words("kind", kind),
                weight_dtype=_words("weight-dtype", weight_dtype), kv_dtype=_words("kv-dtype", kv_dtype),
                efficiency=_words("efficiency", efficiency), chips=chips, tp=tp, ep=ep, pp=pp, dp=dp, batch=batch,
                context=context, len_pass=len_pass, concurrency=concurrency, rate=rate, isl=isl, osl=osl)
    # the numbers stay text: the sweep's axes read them with the one grammar (answers/inputs: 1..4096, 1k..1M:256log)
    if as_csv and out:
        raise UsageError("--csv: prints the points; with --out they go to the file instead, choose one")
    if plot is not None and (not plot.endswith(".html") or not Path(plot).resolve().parent.is_dir()):
        raise UsageError(f"--plot: {plot!r} must be an .html file in an existing folder")
    try:
        spec = spec_of(axes, {"chunk_points": CHUNK_POINTS if chunk_points is None else chunk_points, "engine": engine,
                              "variables": None if vars_ is None else _words("vars", vars_)})
    except ValueError as e:
        raise UsageError(_in_cli_words(e)) from None
    if as_csv and spec.grid.size > MAX_PRINTED:
        raise UsageError(f"--csv: {spec.grid.size:,} points is over the {MAX_PRINTED:,} printed; use --out")
    if plot and vars_ is not None:
        missing = [v for v in AXES_OF[spec.grid.serving] + ("bound",) if v not in spec.variables()]
        if missing:
            raise UsageError(f"--vars: --plot draws {', '.join(missing)}; add them or leave --plot out")
    tally = Tally(spec.grid, fronts=bool(plot))
    client = _client(dask)
    try:
        res = run(spec, out=out, client=client, tally=tally)
    finally:
        if client is not None:
            client.close()
    if plot:
        _plot(plot, tally.fronts, spec.grid.serving)
    if as_csv:
        typer.echo(res.to_dataframe().reset_index().to_csv(index=False), nl=False)
        return
    typer.echo(_summary(spec, res, tally.by_code(), len(chunks(spec))))
    if plot:
        typer.echo(f"plot: {plot}")


# tk.sweep's keywords that the CLI names otherwise (the rest: --the-same-name, cli.app.as_option)
CLI_NAMES = {"variables": "--vars", "client": "--dask"}


def _in_cli_words(e: ValueError) -> str:
    """tk.sweep's refusal 'name: ...' as '--option: ...' (one line); a session sweep's list of its axes
    (answers/sweeps.SESSION_SWEEP_AXES) and its workload=... as the flags that set them."""
    from tokenomy.answers.sweeps import SESSION_SWEEP_AXES

    line = str(e).splitlines()[0]
    flags = re.sub(r"[a-z_]+", lambda m: m[0] if m[0] in ("or", "and") else "--" + m[0].replace("_", "-"),
                   SESSION_SWEEP_AXES)
    line = re.sub(r"\(workload='(\w+)'\)", r"(--workload \1)", line.replace(SESSION_SWEEP_AXES, flags))
    name, sep, rest = line.partition(":")
    return f"{CLI_NAMES[name]}:{rest}" if sep and name in CLI_NAMES else as_option(line)


def _session_sweep(values: dict, cli_only: str | None, out: str | None, as_csv: bool) -> None:
    """tokenomy sweep --workload multiturn|agentic: tk.sweep's session sweep (answers/sweep_sessions.py) over the
    load, think times, DRAM and NVMe sizes given, printed as a table (or CSV) or written to ``out``; the pass
    sweep's options given are refused by tk by name, the CLI's own (``cli_only``: --set, --plot) here."""
    from tokenomy.answers.sweeps import sweep

    if cli_only:
        raise UsageError(f"{cli_only}: not with a session sweep (--workload); its axes: --concurrency or "
                         "--rate, --think-s, --dram-bytes, --nvme-bytes")
    if as_csv and out:
        raise UsageError("--csv: prints the points; with --out they go to the file instead, choose one")
    for name in ("model", "hardware"):
        if len(_words(name, values[name])) > 1:
            raise UsageError(f"--{name}: a session sweep takes one {name}")
    try:
        res = sweep(**{k: v for k, v in values.items() if v is not None}, out=out)
    except ValueError as e:
        raise UsageError(_in_cli_words(e)) from None
    if out:
        typer.echo(f"written: {res}")
        return
    table = res.to_dataframe().reset_index()
    typer.echo(table.to_csv(index=False) if as_csv else f"{res.attrs['title']}\n{table.to_string(index=False)}",
               nl=not as_csv)
