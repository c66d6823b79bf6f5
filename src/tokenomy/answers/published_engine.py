"""Published training runs re-asked through the engine: each run's own layout (its catalog file's [layout] table)
through ``train`` — the door ``tokenomy train`` opens — under the chip's fitted training terms, against the
GPU-hours the run published.

    chip-hours = steps · t_step · chips / goodput,   steps = tokens / (global batch · sequence)
    $ = chip-hours x the chip's catalog price;  MWh = the steps' all-in energy (answers/energy_cols.train_energy:
    board power from the step's busy shares, PUE, host and network), the idle share of downtime not counted
goodput = the share of wall-clock the run spent training (Llama 3: "higher than 90% effective training time";
DeepSeek-V3's hours are a rate of steady training, 1.0). Where econ/published.py divides FLOPs by a stated MFU,
this predicts the MFU: nothing published about the run's speed goes in.
"""

from __future__ import annotations

from tokenomy.catalog import loader
from tokenomy.econ.published import RUNS, load_run, run_names

KEYS = ("hardware", "tp", "pp", "cp", "ep", "schedule", "virtual_stages", "recompute", "micro_batch", "seq_len",
        "global_batch", "compute_dtype", "activation_dtype", "optimizer_dtype", "flash_attention", "tp_overlap",
        "moe_kernels", "moe_dispatcher", "zero", "ep_overlap", "attention_kernel", "fp8_scaling", "bf16_layers_at_end",
        "offload_layers")


def layout_of(name: str) -> dict | None:
    """The run's [layout] table (catalog/training_runs/<name>.toml), or None when it states none."""
    return loader.read_toml(RUNS, load_run(name).name).get("layout")


def engine_check(name: str, tokens: float | None = None) -> dict:
    """The run on its published layout through ``train``: step, MFU, chip-hours and their error; ``tokens``: that
    many tokens on the same layout instead of the run's own (the lifecycle's what-ifs)."""
    from tokenomy.answers.training import train

    r, lay = load_run(name), layout_of(name)
    if lay is None:
        raise ValueError(f"published: {name} has no [layout] in catalog/training_runs/{name}.toml")
    row = train(model=r.model, chips=r.chips, tokens=float(lay["tokens"] if tokens is None else tokens),
                **{k: lay[k] for k in KEYS if k in lay}).rows()[0]
    if not row["fits"]:
        raise ValueError(f"published: {name}'s layout does not fit: {row.get('why', '')}")
    goodput = float(lay["goodput"])
    hours = row["chip_hours"] / goodput
    published = float(lay["published_chip_hours"])
    return {"run": name, "chips": r.chips, "hardware": lay["hardware"], "step_s": row["step_s"], "mfu": row["mfu"],
            "bubble_fraction": row["bubble_fraction"], "goodput": goodput, "days": row["days"] / goodput,
            "engine_chip_hours": hours, "published_chip_hours": published,
            "engine_error_fraction": hours / published - 1, "usd": row["usd"] / goodput,
            "mwh_training": row.get("mwh_all_in"), "scope": lay.get("scope", "")}


def engine_rows() -> list[dict]:
    """One row per published run that states its layout."""
    return [engine_check(n) for n in run_names() if layout_of(n) is not None]
