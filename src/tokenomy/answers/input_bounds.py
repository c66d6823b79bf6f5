"""The bounds of every number a user gives, in one table (``FIELDS``: name -> whole number or not, [lo, hi], unit,
help), shared by the web's numeric parameters, the CLI's options and the answers' keywords of the same name; the
grammar that reads the values is inputs.py, which re-exports all of this."""

from __future__ import annotations

from dataclasses import dataclass

MAX_WHOLE = 2**53  # beyond what a float (and numpy's arrays) hold exactly
MAX_BATCH = 2**20
MAX_CONTEXT = 2**24
MAX_CHIPS = 2**20


def readable(x: float) -> str:
    """A bound as people read it: 1,048,576 for whole numbers below 10^10, else 1e-6 / 2.5e12 (no '+', no '06')."""
    if x == int(x) and abs(x) < 1e10:
        return f"{int(x):,}"
    mantissa, _, exponent = f"{x:.4g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


@dataclass(frozen=True)
class Field:
    """One user value's bounds: [lo, hi] ((lo, hi] when ``lo_open``), whole numbers only when ``whole``."""

    lo: float
    hi: float
    lo_open: bool = False
    whole: bool = False
    unit: str = ""
    help: str = ""

    def __str__(self) -> str:
        return f"{'(' if self.lo_open else '['}{readable(self.lo)}, {readable(self.hi)}]"

    def admits(self, x: float) -> bool:
        return (self.lo < x if self.lo_open else self.lo <= x) and x <= self.hi


def _f(lo, hi, unit="", help="", lo_open=False) -> Field:
    return Field(lo, hi, lo_open, False, unit, help)


def _w(lo, hi, unit="", help="") -> Field:
    return Field(lo, hi, False, True, unit, help)


DEGREE = _w(1, 2**16, "chips")
SHARE = _f(0, 1)  # a fraction of something
UTILISATION = _f(1e-3, 1)  # an MFU or a peak's share: 0 would make every time infinite
SECONDS = _f(1e-6, 1e6, "s")  # a latency target or interval: 1 µs .. 11.6 days
PARAMS = _f(1e6, 1e15, "parameters")
POOL = _w(1, MAX_CHIPS, "chips")
FIELDS: dict[str, Field] = {  # the one table: every number a user gives, by name, at every door
    # a pass (decode, prefill) and the deployment
    "batch": _w(1, MAX_BATCH, "sequences", "sequences per step (comma list or range)"),
    "context": _w(1, MAX_CONTEXT, "tokens", "tokens already in the KV cache (comma list or range)"),
    "len_pass": _w(1, MAX_CONTEXT, "tokens", "new tokens per sequence in the pass"),
    "chips": _w(1, MAX_CHIPS, "chips", "chips to use (default: the system's)"),
    "tp": _w(1, 2**16, "chips", "tensor-parallel degree (default: the best layout over all chips)"),
    "ep": _w(1, 2**16, "chips", "expert-parallel degree (MoE; attention data-parallel)"),
    "pp": _w(1, 2**16, "stages", "pipeline stages (micro-batches = stages)"),
    "dp": _w(1, 2**16, "replicas", "data-parallel replicas"),
    "cp": _w(1, 2**16, "chips", "context-parallel degree"), "virtual_stages": _w(1, 2**16, "stages"),
    "redundant_experts": _w(0, 2**16, "experts", "extra expert replicas (EPLB), so ep may divide experts + replicas"),
    "usd_per_chip_hour": _f(0, 1e4, "$/chip-hour", "rental price (default: the catalog's)", lo_open=True),
    "hop_latency": _f(0, 10, "s", "pipeline hop latency (default: the link's)"),
    "usd_per_kwh": _f(0, 10, "$/kWh", "electricity price (default: the facility's)"),
    "flops_fraction": _f(1e-3, 1, "", "achievable fraction of peak FLOP/s"),
    "hbm_fraction": _f(1e-3, 1, "", "achievable fraction of HBM bandwidth"),
    "overhead_s": _f(0, 10, "s", "fixed per-step overhead"),
    # plan
    "min_tokens_per_user": _f(0, 1e9, "tokens/s"), "max_ttft": SECONDS, "max_batch": _w(1, MAX_BATCH, "sequences", "running-sequence cap"),
    "top": _w(0, 1000, "rows"),
    # economics: latency, context, speculate, cache, pricing
    "tick_s": SECONDS, "global_tokens_per_s": _f(1, 1e15, "tokens/s"), "sparse_const": _f(0, 1e9, lo_open=True),
    "sparse_exponent": _f(0, 1, lo_open=True), "band": _f(1, 1e6, lo_open=True), "acceptance": SHARE,
    "draft_cost": _f(0, 0.999), "base_batch": _w(1, MAX_BATCH, "sequences"), "target_speed": _f(1, 1000),
    "draft_tokens": _w(1, 64, "tokens"), "hold": _f(0, 1e9, "s", lo_open=True), "stall": SHARE,
    "prefix_tokens": _w(1, MAX_CONTEXT, "tokens"), "prefill_batch": _w(1, MAX_BATCH, "sequences"),
    "prompt_tokens": _w(1, MAX_CONTEXT, "tokens"), "step_context": _w(1, 1e9, "tokens"),
    # serve (a workload)
    "concurrency": _f(1, 1e7, "users", "closed loop: users, e.g. 1,4,16,64,256"),
    "rate": _f(1e-6, 1e7, "requests/s", "open loop: requests/s (Poisson arrivals), e.g. 0.5,1,2"),
    "isl": _w(1, MAX_CONTEXT, "tokens", "input tokens per request"),
    "osl": _w(1, MAX_CONTEXT, "tokens", "output tokens per request"),
    "cache_hit": _f(0, 0.99, "", "fraction of input tokens served from a prefix cache"),
    "max_num_tokens": _w(1, MAX_CONTEXT, "tokens", "token budget per step"),
    "batch_wait_iters": _w(0, 10**6, "iterations", "TensorRT-LLM delayed batching: iterations new prompts are held "
                           "while others decode (batch_wait_timeout_iters; 0: off)"),
    "batch_wait_tokens_ratio": _f(0, 1, "", "TensorRT-LLM delayed batching: ... or until the held prompts and the "
                                  "decodes fill this share of max_num_tokens (batch_wait_max_tokens_ratio; 0: off)"),
    "ttft_slo": _f(1e-6, 1e6, "s", "TTFT SLO (goodput)"), "tpot_slo": _f(1e-6, 1e6, "s", "TPOT SLO (goodput)"),
    "requests": _w(1, 10**8, "requests", "simulate: requests to run (default 2000); --protocol: the run's prompt "
                   "count (default: the tool's); an analytic open loop: a finite run of that many (default: endless)"),
    "seed": _w(0, 2**32 - 1, "", "simulate: random seed"),
    "prefill_chips": POOL, "decode_chips": POOL,
    "max_chips": _w(1, 4096, "chips", "min-chips: the largest chip count tried (powers of two up to it)"),
    "turns": _w(1, 10**4, "turns", "session workloads: turns of a session's main agent"),
    "think_s": _f(0, 1e6, "s", "session workloads: mean think time between turns, e.g. 2,10,60"),
    "dram_bytes": _f(0, 1e15, "bytes", "KV tier: host DRAM per node for the cache (default: half the host's)"),
    "nvme_bytes": _f(0, 1e17, "bytes", "KV tier: local NVMe per node for the cache (default: all of it)"),
    "hold_out": _w(1, 10**6, "", "calibrate: every k-th point held out (k >= 2, the answer says why)"),
    # train, rl, lifecycle
    "micro_batch": _w(1, MAX_BATCH, "sequences"), "seq_len": _w(1, MAX_CONTEXT, "tokens"),
    "global_batch": _w(1, 2**24, "sequences"), "zero": _w(0, 3), "ep_overlap": SHARE, "tp_overlap": SHARE,
    "bf16_layers_at_end": _w(0, 10_000, "layers", "train: the recipe's last layers whose GEMMs stay in BF16"),
    "offload_layers": _w(0, 10_000, "layers", "train: layers whose activations the recipe offloads to host memory"),
    "tokens": _f(1, 1e17, "tokens"), "mfu": UTILISATION, "flops_factor": _f(2, 6), "train_mfu": UTILISATION,
    "rollouts": _w(1, 2**20), "prompt_len": _w(1, MAX_CONTEXT, "tokens"), "output_len": _w(1, MAX_CONTEXT, "tokens"),
    "demand_tokens_per_s": _f(1, 1e15, "tokens/s"), "period_days": _f(0.01, 36_500, "days"),
    "target_loss": _f(0, 20, lo_open=True), "target_params": PARAMS, "rl_tokens_ratio": _f(0, 100, lo_open=True),
    "rl_flops_factor": _f(2, 6), "rl_penalty": _f(1, 100), "inference_penalty": _f(1, 100), "active_params": PARAMS,
    "models_per_family": _f(1, 1e6),
    "pretrain_tokens": _f(1, 1e17, "tokens", "lifecycle --run: pre-training tokens (default: the run's published "
                          "count)"),
    "rollout_concurrency": _f(1, 1e7, "rollouts", "lifecycle --run: RL rollouts generated at once"),
    "inference_concurrency": _f(1, 1e7, "users", "lifecycle --run: users served at once"),
    # the CLI's own commands (web, calibrate, revnet-demo, sweep): numbers no answer takes, bounded here all the same
    "port": _w(1, 65_535, "", "TCP port to listen on"), "workers": _w(1, 256, "processes"),
    "layers": _w(1, 10_000, "layers"), "divisor": _w(1, 2**16), "vocab": _w(16, 2**24, "tokens"),
    "steps": _w(1, 10**7, "steps"), "every": _w(1, 10**7, "steps"), "matmul_size": _w(64, 2**16),
    "copy_mb": _f(1, 1e6, "MB"), "chunk_points": _w(1, 2**30, "points", "points per chunk (default 262144)"),
}
for _pool in ("prefill", "decode"):  # a disaggregated pool's layout (serve --prefill-tp ...)
    FIELDS.update({f"{_pool}_{k}": FIELDS[k] for k in ("tp", "ep", "pp", "dp", "redundant_experts")})


def help_text(name: str, lists: bool = False) -> str:
    """An option's help from its row: what it is, then what is allowed (the CLI's --help, tk.*'s Options)."""
    f = field_of(name)
    what = (f.help[:1].upper() + f.help[1:] + "; ") if f.help else ""
    return f"{what}{allowed(name, lists)}."


def allowed(name: str, lists: bool = False) -> str:
    """What field ``name`` takes, from its row: 'whole number in [1, 65,536] chips'."""
    f = field_of(name)
    kind = f"{'whole ' if f.whole else ''}number{'s (a list)' if lists else ''}"
    return f"{kind} in {f}{' ' + f.unit if f.unit else ''}"


def field_of(name: str) -> Field:
    """The bounds of ``name`` (dashes as underscores); a number without a bound is a bug, refused here."""
    f = FIELDS.get(name.replace("-", "_"))
    if f is None:
        raise KeyError(f"{name}: a number without a bound in answers/inputs.FIELDS")
    return f

