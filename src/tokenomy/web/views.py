"""Data of the Plan, Train, Lifecycle, Cache tiers and Lecture pages: the answer's ``payload()`` (what
``/api/<command>`` and the CLI's ``--json`` return), plus the figures drawn from it by ``tokenomy.plots``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping
from urllib.parse import urlencode

from tokenomy.core.memory import SCHEDULES, STRATEGIES
from tokenomy.econ import speculative as es
from tokenomy.formatting import fmt_human
from tokenomy.plots import economics as ep
from tokenomy.plots import serving as sp
from tokenomy.plots import training as tp
from tokenomy.web import params as P
from tokenomy.web.openapi import HELP as API_HELP  # the API's help lines for inputs the forms share with it
from tokenomy.web.serve import plain

# One line of help per form input (the answers' signatures carry none); shown under the input and as its tooltip.
HELP = {
    "model": "a catalog model (or upload a config.json on the Serve page)",
    "hardware": "a chip or a system (node, rack, cluster) from the catalog",
    "emit": "launch command of the best plan for an engine: vllm, sglang, trtllm or dynamo (docs/deploy.md)",
    "set": "what-if hardware: field=value pairs, SI units or a multiplier of the catalog's (hbm_bytes_per_s=x2, "
           "bf16_flops_per_s=1.2e15, usd_per_chip_hour=3); fields: specs.OVERRIDABLE",
    "chips": "number of chips; empty: all of the system's",
    "context": "tokens of context per sequence",
    "min_tokens_per_user": "SLO: least decode tokens/s each user sees",
    "max_ttft": "SLO: longest time to first token, seconds",
    "weight_dtype": "dense and expert weights; empty: the checkpoint's own",
    "kv_dtype": "KV-cache element type",
    "protocol": "the benchmark tool whose run the figures reproduce (its prompt count, arrivals, length draws and "
                "metric definitions); steady: the steady state users plan with",
    "efficiency": "calibrated: the chip's fitted terms (the estimate); roofline: ideal (the bound)",
    "top": "rows of the Pareto front to list; 0: all",
    "use_case": "chat, rag, code-completion, agent, batch-summarisation (a comma list); empty: all",
    "max_chips": "the largest chip count tried (1, 2, 4, ... up to it)",
    "concurrency": "users served at once (closed loop); min_chips: one value per use case",
    "tp": "tensor-parallel degree", "pp": "pipeline stages", "cp": "context-parallel degree",
    "ep": "expert-parallel degree", "dp": "data-parallel replicas; empty: chips / (tp·pp·cp)",
    "zero": "ZeRO stage (1: optimizer, 2: + gradients, 3: + weights sharded over dp)",
    "schedule": "pipeline schedule: 1f1b, interleaved (with virtual stages), dualpipe (DeepSeek-V3's), zero-bubble "
                "zb-h1 (1F1B's memory), zb-h2 (about 2x its activations), zb-v (two chunks a rank, 1F1B's memory), gpipe",
    "recompute": "activation recompute: none, selective (core attention, or the modules listed), modules (norms, "
                 "MLA up-projections, SwiGLU), op (torchtitan's op-level: every second matmul), full, reversible",
    "recompute_modules": "with recompute selective: Megatron-Core's recompute_modules, comma-separated: core_attn, "
                         "moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts (empty: core_attn)",
    "micro_batch": "sequences per micro-batch",
    "seq_len": "tokens per training sequence",
    "global_batch": "sequences per optimizer step; a list (256,512) or a range (256..4096) compares several",
    "tokens": "training tokens, for days and $ (e.g. 15e12)",
    "mfu": "model FLOPs utilisation (0..1): Train: instead of the modelled step; Lifecycle: prices FLOPs",
    "demand_tokens_per_s": "inference demand over the model's life, tokens/s",
    "period_days": "days the model serves before it is replaced",
    "target_params": "parameters of a Chinchilla-optimal model whose loss is the quality target",
    "target_loss": "quality target as a Chinchilla loss; empty: the reference model's",
    "rl_tokens_ratio": "RL tokens per pre-training token",
    "rl_flops_factor": "f in C_RL = f·N·D_RL·p_RL (FLOPs per RL token over N)",
    "rl_penalty": "p_RL: RL's hardware-efficiency penalty (multiplies C_RL)",
    "inference_penalty": "p_inf: inference's penalty (multiplies C_inf = 2·N·D_inf)",
    "infer": "yes: solve for the model size from the demand (the lecture's inverse)",
    "active_params": "active parameters of the model served (with infer)",
    "models_per_family": "models sharing the demand (with infer: D_inf = rate·period / this)",
    "run": "a published run (deepseek-v3, llama-3.1-405b): each phase from the engine instead of the constants",
    "serve_hardware": "with run: the system that generates RL rollouts and serves inference",
    "pretrain_tokens": "with run: pre-training tokens; empty: the run's published count",
    "prompt_len": "with run: prompt tokens per RL rollout", "output_len": "with run: generated tokens per rollout",
    "rollout_concurrency": "with run: rollouts generated at once",
    "inference_concurrency": "with run: inference users served at once",
    "prefix_tokens": "tokens of the cached prefix",
    "hold": "seconds the prefix is kept; a list compares several",
    "stall": "share of the chips' time lost while a prefix is read back (0..1)",
    "prefill_batch": "sequences per rematerialising prefill",
    "kind": "decode: one new token per sequence (TPOT); prefill: the prompt's tokens in one pass",
    "batch": "sequences in the step",
    "len_pass": "new tokens per sequence over the cached context; empty: the whole context",
    "redundant_experts": "extra replicas of hot experts over the EP ranks (DeepSeek's EPLB)",
    "attn_dp": "with ep > 1: attention data-parallel over the EP ranks (DeepSeek), or tensor-parallel over tp·ep",
    "kv_batch": "shard the KV cache by sequence beyond the KV heads (Pope et al. 2022 §3.3)",
    "layout": "ideal: every byte split evenly over the chips, no communication (a bound no layout reaches)",
    "hop_latency": "seconds per pipeline hop; empty: the link's latency",
    "usd_per_chip_hour": "rental price; empty: the catalog's",
    "tick_s": "seconds between departures; empty: the step time (one batch leaves per step)",
    "global_tokens_per_s": "the whole service's decode tokens/s (what share one replica serves)",
    "prompt_tokens": "tokens of the prompt (input) priced by one prefill pass",
    "draft": "model: a separate draft model; mtp: the model's own multi-token-prediction module",
    "draft_tokens": "k: tokens drafted per round; empty: 3 (model) or the model's MTP modules",
    "acceptance": "alpha: chance each drafted token is accepted (0..1)",
    "draft_cost": "a draft step's cost as a fraction of the plain step (draft=model)",
    "base_batch": "the plain-decoding batch the multipliers compare against",
    "target_speed": "tokens/s-per-user multiple asked of speculation + a smaller batch",
}
# inputs with a closed set of values: a select on the form (the answer checks the value either way)
PAGE_CHOICES = {"schedule": SCHEDULES, "recompute": STRATEGIES, "zero": ("0", "1", "2", "3"),
                "draft": tuple(es.DRAFT_KINDS)}


@dataclass(frozen=True)
class Page:
    """A page over one CLI command: its defaults (shown in the form), its fields, and what it draws."""

    command: str
    title: str
    defaults: Mapping[str, str]
    fields: tuple[str, ...]  # the form's inputs, in order (every one an option of the command)
    figures: Callable[[object, dict], dict]
    cards: Callable[[object], list] = lambda data: []  # the headline: (label, value, note) per card
    table: str | None = None  # payload key of the rows shown as a table (a list payload: the payload itself)
    rows_payload: bool = False  # the answer's payload is its rows: figures and cards take them (on what-if hardware
    # too, where the payload is {"hardware_overrides": ..., "rows": ...}: answers/variants.py)

    def values(self, params: Mapping[str, str]) -> dict[str, str]:
        """The request's values over the defaults; an empty value is the default (as the form sends it)."""
        return {**self.defaults, **{k: v for k, v in params.items() if v.strip()}}

    def view(self, params: Mapping[str, str]) -> dict:
        query = {k: v for k, v in self.values(params).items() if v.strip()}
        res = P.answer(self.command, query)
        data = res.rows() if self.rows_payload else res.payload()
        rows = data if isinstance(data, list) else data.get(self.table, []) if self.table else []
        return {"data": data, "title": res.title, "notes": list(res.notes), "overrides": res.extra.get(
                    "hardware_overrides") or (data.get("hardware_overrides") if isinstance(data, dict) else None), "explain": plain(list(res.explain())),
                "figures": self.figures(data, query), "cards": self.cards(data), "rows": rows,
                "columns": [c for c in res.columns if not rows or c in rows[0]]}

    def options(self) -> dict[str, P.Option]:
        """The form's inputs with the answer's defaults (plain text inputs while the answer is missing)."""
        try:
            offered = P.options(self.command)
        except ValueError:
            offered = {}
        out = {}
        for f in self.fields:
            o = offered.get(f, P.Option("text"))
            kind = "choice" if f in PAGE_CHOICES else o.kind
            out[f] = P.Option(kind, o.default, HELP.get(f) or API_HELP.get(f) or o.help, o.required)
        return out


def _plan_figures(d: dict, q: dict) -> dict:
    """The front: a bare search's points are batches; a serving plan's (a workload given) its load points."""
    rows = [{**r, "pareto": True} for r in d["front"]]
    point = "batch" if "mode" not in d else "concurrency" if any(r.get("concurrency") for r in rows) else "rate"
    what = "Pareto front" if "mode" not in d else f"{d['mode']} serving plans"
    return {"front": sp.pareto(rows, f"{what}: {d['model']} on <= {d['chips_budget']} x {d['hardware']}",
                               group="plan", point=point)}


def _train_figures(rows: list, q: dict) -> dict:
    return {"terms": tp.step_terms(rows), "memory": tp.memory_stack(rows)}


def cache_figures(d: dict, q: dict) -> dict:
    """Each tier's cost line over hold time, from its rate and retrieve cost in the JSON: the same straight
    line econ.kv_tiers.tier_costs draws (total = retrieve + hold rate x T; tested against its total at a hold)."""
    holds = [10 ** (-3 + 9 * i / 119) for i in range(120)]  # 1 ms .. 1e6 s
    curves = {"hold_s": holds, "remat_usd": d["remat_usd"],
              "tiers": {t["tier"]: [t["retrieve_usd"] + t["hold_usd_per_s"] * h for h in holds] for t in d["tiers"]
                        if t.get("capacity_bytes")}}  # the "rematerialise" row is the flat line
    return {"tiers": sp.tier_costs_vs_hold(curves)}


def _best(rows: list, key: str, pick=max):
    ok = [r for r in rows if r.get(key) is not None]
    return pick(ok, key=lambda r: r[key]) if ok else None


def _train_cards(rows: list) -> list:
    ok = [r for r in rows if r.get("fits")]
    if not ok:
        return [("fits", "no global batch fits", rows[0].get("why") if rows else "")]
    b = _best(ok, "mfu")
    cards = [("best MFU", fmt_human("mfu", b["mfu"]), f"global batch {b['global_batch']}"),
             ("step", fmt_human("step_s", b["step_s"]), f"{b['bound']}-bound"),
             ("memory per chip", fmt_human("bytes", b["memory_per_chip_bytes"]), f"of {fmt_human('bytes', b['hbm_bytes'])}")]
    if b.get("days") is not None:
        cards += [("training time", fmt_human("training_time_s", b["days"] * 86400), None),
                  ("cost", fmt_human("usd", b["usd"]), None)]
    return cards


def _latency_cards(d: dict) -> list:
    s = d["schedule"]
    b = _best(s, "tokens_per_s_per_chip")
    if b is None:
        return [("fits", "no batch fits", None)]
    return [("most tokens/s per chip", fmt_human("tokens_per_s", b["tokens_per_s_per_chip"]), f"batch {b['batch']}"),
            ("its worst-case latency", fmt_human("worst_case_latency_s", b["worst_case_latency_s"]), "tick + step"),
            ("tokens/s per user", fmt_human("tokens_per_s", b["tokens_per_s_per_user"]), None)]


def _pricing_cards(d: dict) -> list:
    b = _best(d["rows"], "usd_per_mtok_output", min)
    if b is None:
        return [("fits", "no decode batch fits", None)]
    return [("input (prefill)", fmt_human("usd_per_mtok", b["usd_per_mtok_input"]) + " / M", f"{b['prompt_tokens']:,}-token prompt"),
            ("output (decode), cheapest", fmt_human("usd_per_mtok", b["usd_per_mtok_output"]) + " / M", f"batch {b['decode_batch']}"),
            ("output / input", _times(b["output_over_input"]),
             f"providers charge {b['provider_ratio_lo']:g}-{b['provider_ratio_hi']:g}x")]


def _times(v) -> str:
    """A ratio as '3.2x'; '-' where the answer has none (a prefill that does not fit has no input price)."""
    return "-" if v is None else f"{v:.3g}x"


def _speculate_cards(d: dict) -> list:
    b = _best(d["rows"], "speedup")
    if b is None:
        return [("fits", "no batch fits", None)]
    return [("best speed-up", _times(b["speedup"]), f"batch {b['batch']}"),
            ("tokens per round", f"{b['tokens_per_step']:.3g}", f"{b['binds']} binds"),
            ("cost ratio there", _times(b["cost_ratio"]), "$/token vs plain decoding")]


def _min_chips_cards(d: dict) -> list:
    """The fewest chips over the use cases asked, and the use case that needs the most."""
    ok = [r for r in d["rows"] if r["min_chips"]]
    if not ok:
        return [("min chips", "none within the chips tried", d["rows"][0]["why"] if d["rows"] else None)]
    lo, hi = min(ok, key=lambda r: r["min_chips"]), max(ok, key=lambda r: r["min_chips"])
    return [("fewest chips", f"{lo['min_chips']:,}", lo["use_case"]), ("most chips", f"{hi['min_chips']:,}",
            hi["use_case"]), ("served", f"{len(ok)} of {len(d['rows'])}", "use cases within the SLOs")]


def workload_link(row: dict, q: Mapping[str, str]) -> str:
    """The Workload page preset to a min-chips row: its use case's lengths and SLOs, its chips, its users."""
    keep = {k: q[k] for k in ("model", "hardware", "engine", "weight_dtype", "kv_dtype", "efficiency", "cache_hit",
                              "usd_per_chip_hour") if q.get(k)}
    return "/workload?" + urlencode({**keep, "preset": row["use_case"], "chips": row["min_chips"],
                                     "concurrency": f"{row['concurrency']:g}"})


_PASS_FIELDS = ("model", "hardware", "chips", "batch", "context")
_PASS_TAIL = ("tp", "ep", "pp", "dp", "weight_dtype", "kv_dtype", "efficiency", "usd_per_chip_hour")
_PASS_DEFAULTS = {"model": "llama-3.1-70b", "hardware": "hgx-h100-8", "context": "8192"}


PAGES = {
    "plan": Page("plan", "Plan", {"model": "deepseek-v3", "hardware": "gb200-nvl72", "context": "8192", "top": "24"},
                 ("model", "hardware", "chips", "context", "min_tokens_per_user", "max_ttft", "weight_dtype",
                  "kv_dtype", "efficiency", "top", "emit", "mode", "concurrency", "rate", "isl", "osl", "ttft_slo",
                  "tpot_slo", "engine"), _plan_figures),
    "latency": Page("latency", "Latency", _PASS_DEFAULTS,
                    _PASS_FIELDS + ("tick_s", "global_tokens_per_s") + _PASS_TAIL,
                    lambda d, q: {"schedule": ep.latency_schedule(d["schedule"]),
                                  "pareto": sp.pareto(d["schedule"], "Tokens/s per chip vs per user")},
                    _latency_cards, "schedule"),
    "pricing": Page("pricing", "Pricing", _PASS_DEFAULTS,
                    _PASS_FIELDS + ("prompt_tokens", "prefill_batch") + _PASS_TAIL,
                    lambda d, q: {"prices": ep.pricing_vs_batch(d["rows"])}, _pricing_cards, "rows"),
    "speculate": Page("speculate", "Speculative decoding", _PASS_DEFAULTS,
                      _PASS_FIELDS + ("draft", "draft_tokens", "acceptance", "draft_cost", "base_batch",
                                      "target_speed") + _PASS_TAIL,
                      lambda d, q: {"speedup": ep.speculate_vs_batch(d["rows"])}, _speculate_cards, "rows"),
    "train": Page("train", "Train", {"model": "llama-3.1-70b", "hardware": "h100-sxm", "chips": "1024", "tp": "8",
                                     "pp": "4", "seq_len": "8192", "global_batch": "256,512,1024", "tokens": "15e12"},
                  ("model", "hardware", "chips", "tp", "pp", "cp", "ep", "dp", "zero", "schedule", "virtual_stages",
                   "recompute", "recompute_modules", "micro_batch", "seq_len", "global_batch", "tokens", "mfu",
                   "compute_dtype",
                   "activation_dtype", "optimizer_dtype", "fp8_scaling", "attention_kernel", "flash_attention",
                   "ep_overlap", "tp_overlap", "moe_dispatcher", "search"), _train_figures, _train_cards,
                  rows_payload=True),
    "lifecycle": Page("lifecycle", "Lifecycle", {"demand_tokens_per_s": "5e7", "period_days": "60"},
                      ("demand_tokens_per_s", "period_days", "target_params", "target_loss", "hardware", "mfu",
                       "rl_tokens_ratio", "rl_flops_factor", "rl_penalty", "inference_penalty", "infer",
                       "active_params", "models_per_family", "run", "serve_hardware", "pretrain_tokens",
                       "prompt_len", "output_len", "rollout_concurrency", "isl", "osl", "inference_concurrency"),
                      lambda d, q: {"split": tp.lifecycle_split(d)}),
    "min_chips": Page("min_chips", "Minimum chips per use case",
                      {"model": "llama-3.1-70b", "hardware": "h100-sxm", "concurrency": "16", "max_chips": "64"},
                      ("model", "hardware", "use_case", "concurrency", "max_chips", "engine", "weight_dtype",
                       "kv_dtype", "efficiency", "cache_hit", "usd_per_chip_hour"),
                      lambda d, q: {}, _min_chips_cards, "rows"),
    "cache": Page("cache", "Cache tiers", {"model": "deepseek-v3", "hardware": "hgx-h200-8", "kv_dtype": "fp8",
                                            "prefix_tokens": "32768"},
                  ("model", "hardware", "chips", "prefix_tokens", "hold", "stall", "prefill_batch", "kv_dtype",
                   "efficiency"),
                  cache_figures),
}
