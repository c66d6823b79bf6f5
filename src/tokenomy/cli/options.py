"""Option declarations shared by the pass commands (decode, prefill, plan, estimate, ...): one place for their help
(a number's help and bounds come from its row of answers/inputs.FIELDS)."""

import typer

from tokenomy.answers.inputs import help_text
from tokenomy.cli.numbers import grammar

# what-if hardware on every command that takes --hardware (answers/variants.py; fields: specs.OVERRIDABLE)
SET = typer.Option(None, "--set", help="What-if hardware: field=value[,field=value...], a number in SI units or a "
                   "multiplier of the catalog's value (x2): hbm_bytes_per_s, hbm_bytes, bf16_flops_per_s (any dtype), "
                   "peak_flops_per_s (xN: every dtype), scale_up_bytes_per_s, scale_up_latency_s, "
                   "scale_out_bytes_per_s, scale_out_latency_s, usd_per_chip_hour, tdp_w.")


def what_if(hardware, text: str | None):
    """--hardware with --set applied (answers.variants.hardware_with; its 'set: ...' errors print as '--set: ...');
    the name itself without --set."""
    if text is None:
        return hardware
    from tokenomy.answers.variants import hardware_with

    return hardware_with(hardware, text, door="--set")

def number(name: str, default, lists: bool = False):
    """A number option declared from its row of the table: its help and its grammar."""
    return typer.Option(default, "--" + name.replace("_", "-"), help=help_text(name, lists), parser=grammar(name))


JSON = typer.Option(False, "--json", help="Print JSON.")
CSV = typer.Option(False, "--csv", help="Print CSV.")
EXPLAIN = typer.Option(False, "--explain", help="Show the formulas with the numbers plugged in.")
MODEL = typer.Option(..., "--model", help="Catalog name, config.json path, or directory.")
WEIGHT_DTYPE = typer.Option(None, "--weight-dtype", help="Override the checkpoint's weight dtype.")
KV_DTYPE = typer.Option("bf16", "--kv-dtype", help="KV cache dtype.")
SERVE_KV_DTYPE = typer.Option(None, "--kv-dtype", help="KV cache dtype, or auto (the default): the engine's for "
                              "the weight dtype, catalog/engines: vllm and sglang bf16, trtllm fp8 with fp8/nvfp4 "
                              "weights (plan without a workload: bf16).")
FLOPS_FRACTION = number("flops_fraction", 1.0)
HBM_FRACTION = number("hbm_fraction", 1.0)
HOP_LATENCY = number("hop_latency", None)
EFFICIENCY = typer.Option("calibrated", "--efficiency",
                          help="calibrated (the chip's fitted terms; default), roofline (ideal: the bound), or a "
                               "terms .toml written by tokenomy calibrate --from.")
LAYOUT = typer.Option(None, "--layout", help="ideal: the even split over all chips, a bound no layout reaches.")
REDUNDANT_EXPERTS = number("redundant_experts", None)
# a layout's degrees and flags (decode, prefill, serve; serve's pools take each as --prefill-*/--decode-*)
TP = number("tp", None)
EP = number("ep", None)
PP = number("pp", None)
DP = number("dp", None)
ATTN_TP = typer.Option(False, "--attn-tp", help="With --ep: attention tensor-parallel (not DP).")
KV_BATCH = typer.Option(False, "--kv-batch", help="Shard KV by sequence beyond the KV heads.")


def layout_flags(tp, ep, pp, dp, redundant_experts, attn_tp, kv_batch, prefix: str = "") -> dict:
    """The answers' layout keywords (answers.resolve.layout_of's) from the layout flags, each name after
    ``prefix`` (a disaggregated pool's "prefill_" or "decode_"): --attn-tp is attn_dp False, a flag left off None."""
    kw = dict(tp=tp, ep=ep, pp=pp, dp=dp, redundant_experts=redundant_experts,
              attn_dp=False if attn_tp else None, kv_batch=kv_batch or None)
    return {prefix + k: v for k, v in kw.items()}

# a serving workload (tokenomy serve, tokenomy plan with a workload)
CONCURRENCY = typer.Option(None, "--concurrency", help=help_text("concurrency", lists=True))
RATE = typer.Option(None, "--rate", help=help_text("rate", lists=True))
ISL = number("isl", 1024)
OSL = number("osl", 1024)
CACHE_HIT = number("cache_hit", 0.0)
ENGINE = typer.Option("vllm", "--engine", help="vllm | sglang | trtllm (profiles in catalog/engines).")
PLAN_ENGINE = typer.Option(None, "--engine", help="vllm | sglang | trtllm (profiles in catalog/engines; default vllm, "
                           "or the engine --emit names).")
EMIT = typer.Option(None, "--emit", help="vllm | sglang | trtllm | dynamo: print the launch command (and config "
                    "file) of each pool of the chosen plan, flags from catalog/engines/flags (docs/deploy.md).")
TTFT_SLO = number("ttft_slo", None)
TPOT_SLO = number("tpot_slo", None)
USD_PER_KWH = typer.Option(None, "--usd-per-kwh", help="Electricity price, $/kWh (default: catalog/power/facility.toml, "
                                                       "$0.08, US industrial average).")
FACILITY = typer.Option(None, "--facility", help="Deployment class for the facility overhead (PUE): hyperscale "
                                                 "(default, 1.10) | colocation (1.56) | ai-liquid (1.20).")
