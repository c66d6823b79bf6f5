"""Lecture claims L1-L28 (reference/lecture.md §4.1), each computed by the engine from its stated inputs.

Each ``Claim`` holds what the lecture said (``lecture_value``, data) and how to get there (``compute``, a call into
tokenomy's formulas with ``inputs``); no claim's answer is written here. Where the seed summaries misstate the
lecture (lecture.md §2.16) the claim's ``seed`` says what the lecture actually said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from tokenomy.arch.model import Attention, Layer, ModelArch, Mlp
from tokenomy.arch.params import kv_bytes_per_token
from tokenomy.econ import batch as eb
from tokenomy.econ import context as ec
from tokenomy.econ import cost as ecost
from tokenomy.econ import latency as el
from tokenomy.econ import pricing as ep
from tokenomy.econ.kv_tiers import drain_rule_choice
from tokenomy.lecture_claims import local
from tokenomy.lecture_claims.tolerance import Tol


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    section: str  # where lecture.md discusses it
    lecture_value: object  # number, list or text, as the lecture states it
    lecture_text: str  # the lecture's words
    tolerance: Tol
    inputs: dict
    compute: Callable[[dict], object]
    formula: str
    seed: str = ""  # what the seed summaries got wrong, and what the lecture said
    note: Callable[[dict], str] | None = field(default=None)  # context computed from the inputs


def _single_global_layer_kv(i: dict) -> float:
    """A model whose global-attention KV is shared by every layer: one unique layer (Character.AI/Gemma style)."""
    att = Attention("gqa", num_heads=i["kv_heads"] * 8, num_kv_heads=i["kv_heads"], head_dim=i["head_dim"],
                    v_head_dim=i["head_dim"])
    m = ModelArch("one-global-layer", "sketch", hidden_size=i["kv_heads"] * 8 * i["head_dim"], vocab_size=1,
                  layers=(Layer(att, Mlp("dense", 1)),) * i["unique_layers"])
    return kv_bytes_per_token(m, i["kv_dtype"])


def _price_sheet(i: dict) -> list:
    from tokenomy.catalog import loader

    p = loader.price_file(i["price_sheet"])
    return [p.input_usd_per_mtok, p.cache_write_5m_usd_per_mtok / p.input_usd_per_mtok,
            p.cache_read_usd_per_mtok / p.input_usd_per_mtok]


def _drain_rule(i: dict) -> str:
    names = list(i["drain_s"])
    return ", ".join(drain_rule_choice(i["hold_s"], [i["drain_s"][n] for n in names], names))


def _l17(i: dict) -> list:
    w1, kv1 = local.memory_per_gpu(i["total_bytes"], i["micro_batch"], i["context"], i["bytes_per_token"], i["ep"], 1)
    wp, kvp = local.memory_per_gpu(i["total_bytes"], i["micro_batch"], i["context"], i["bytes_per_token"], i["ep"],
                                   i["stages"])
    return [wp / w1, kvp / kv1]


def _l22_note(i: dict) -> str:
    bb = eb.blackboard(i["lecture_batch"], flops=i["R"], mem_bw=1.0, total_bytes=i["sparsity"], active_bytes=1.0,
                       context=i["lecture_context"], bytes_per_token=1.0 / (i["R"] * i["lecture_crossover"]))
    r = float((bb.t_weights + bb.t_kv) / bb.t_compute)
    return (f"The lecture's own operating point (B = {i['lecture_batch']:,}, sparsity {i['sparsity']}, context = len*) "
            f"gives t_mem/t_compute = {r:.2f}, so a 5x price implies decode runs further from the roofline than that "
            "(smaller batches, longer contexts or lower efficiency) - or a margin on output tokens.")


CLAIMS: tuple[Claim, ...] = (
    Claim("L1", "Balance batch B* = R x sparsity (DeepSeek, 32 of 256 experts)", "§2.2", 2400,
          '"2,000", "two to three thousand"; flashcards 2,400', Tol("exact"), {"R": 300, "sparsity": 8},
          lambda i: float(eb.balance_batch(i["R"], i["sparsity"])), "B* = R * N_total/N_active",
          note=lambda i: "The transcript's round '2,000' is within 25% of 2,400. DeepSeek-V3's real ratio is "
          "37B of 671B (~18), see the real-hardware table."),
    Claim("L2", "Balance batch of a dense model", "§2.2", 300, '"around 300"', Tol("exact"), {"R": 300, "sparsity": 1},
          lambda i: float(eb.balance_batch(i["R"], i["sparsity"])), "B* = R * 1"),
    Claim("L3", "Practical batch = 2-3 x balance batch", "§2.2", [4800, 7200], '"double or triple it"', Tol("exact"),
          {"balance_batch": 2400}, lambda i: [float(x) for x in eb.practical_batch(i["balance_batch"])],
          "(2 B*, 3 B*)",
          seed="Seed: 'optimal batch > ~300 x sparsity; practical 2-3x'. Lecture: '2,000 / two to three thousand' is "
               "the balance point itself; 2-3x of it is implied only by 'double or triple it'."),
    Claim("L4", "One serving unit's throughput", "§2.4", 128000, '"around 2,000 x 64, so 128,000 tokens per second"',
          Tol("exact"), {"batch": 2000, "step_s": 1 / 64}, lambda i: float(el.tokens_per_s(i["batch"], i["step_s"])),
          "tok/s = B / step",
          note=lambda i: "With a 15-20 ms step: {:,.0f}-{:,.0f} tok/s.".format(
              *(float(el.tokens_per_s(i["batch"], s)) for s in (0.020, 0.015)))),
    Claim("L5", "One unit vs Gemini's global traffic", "§2.4", 1e-3, '"one-thousandth of that"', Tol("order"),
          {"unit_tokens_per_s": 128000, "global_tokens_per_s": el.GLOBAL_TOKENS_PER_S},
          lambda i: float(el.fraction_of_traffic(i["unit_tokens_per_s"], i["global_tokens_per_s"])),
          "unit / global ('hundreds of millions'; the lecture's own 500M tok/s)",
          seed="Seed: 'providers must serve >= 1000x a single Gemini instance'. Lecture: one efficient unit "
               "(~128k tok/s) is ~1/1000 of Gemini's global traffic."),
    Claim("L6", "Rubin HBM drain time", "§2.3", 0.015, '"288 GB / 20 TB/s ... about 15 milliseconds"', Tol("rel", 0.05),
          {"hbm_bytes": 288e9, "hbm_bytes_per_s": 20e12},
          lambda i: float(el.drain_time_s(i["hbm_bytes"], i["hbm_bytes_per_s"])), "capacity / bandwidth",
          seed="Seed: 'evacuation ~20 ms on Hopper'. Lecture: 20 ms 'on many different generations of HBM'; only "
               "Rubin is computed. Also: no '90% reads' figure, only 'almost all reads'."),
    Claim("L7", "Worst-case latency of the train-departure schedule", "§2.3", 0.040, '"wait up to 20 ms + 20 ms run"',
          Tol("exact"), {"step_s": 0.020}, lambda i: float(el.worst_case_latency_s(i["step_s"])), "wait + run = 2 x step"),
    Claim("L8", "KV bytes/token implied by a 200k price step", "§2.11", 1667, '"1667. Almost two kilobytes."',
          Tol("abs", 1), {"active_bytes": 100e9, "R": 300, "step_context": 200e3},
          lambda i: float(ec.implied_kv_bytes_per_token(i["active_bytes"], i["R"], i["step_context"])),
          "bytes_tok = N_active / (R * len*)"),
    Claim("L9", "KV bytes/token with one shared global-attention layer", "§2.11", 2048, '"exactly this number"',
          Tol("exact"), {"unique_layers": 1, "head_dim": 128, "kv_heads": 8, "kv_dtype": "fp8"},
          _single_global_layer_kv, "layers * 2 * d_head * n_kv_heads * bytes (arch.params on a 1-layer sketch)"),
    Claim("L10", "MFU at twice the crossover context", "§2.5", 0.5, '"That is true as modeled here"', Tol("exact"),
          {"crossover": 100e3, "context": 200e3, "weight_fraction": 0.0},
          lambda i: float(ec.mfu_at_context(i["context"], i["crossover"], i["weight_fraction"])),
          "MFU = t_comp / max(t_comp, t_KV)"),
    Claim("L11", "Inference tokens: 500M tok/s for two months", "§2.10", 2.6e15, '"2.6 x 10^15"', Tol("rel", 0.02),
          {"tokens_per_s": 500e6, "days": 60}, lambda i: float(local.inference_tokens(i["tokens_per_s"], i["days"])),
          "D_inf = rate * time"),
    Claim("L12", "Inference tokens per model (50M tok/s)", "§2.10", 2e14, '"around two hundred trillion"',
          Tol("rel", 0.30), {"tokens_per_s": 50e6, "days": 60},
          lambda i: float(local.inference_tokens(i["tokens_per_s"], i["days"])), "D_inf = rate * time"),
    Claim("L13", "Chinchilla-optimal tokens for 100B active", "§2.10", 2e12, '"2 T"', Tol("exact"),
          {"active_params": 100e9}, lambda i: float(local.chinchilla_tokens(i["active_params"])), "D_Ch = 20 N"),
    Claim("L14", "Over-training factor", "§2.10", 100, '"~100x over-trained"', Tol("factor", 1.5),
          {"tokens_per_s": 50e6, "days": 60, "active_params": 100e9},
          lambda i: float(local.overtraining(local.inference_tokens(i["tokens_per_s"], i["days"]), i["active_params"])),
          "D_inf / (20 N), with D = L12's tokens",
          note=lambda i: "With the lecture's rounded 200 T: {:.0f}x.".format(float(local.overtraining(2e14, 100e9)))),
    Claim("L15", "Token split pre-training : RL : inference", "§2.10", [1, 0.667, 1], "6 D_pre = 3*3 D_RL = 2*3 D_inf",
          Tol("abs", 5e-4), {"rl_flops": 3, "rl_penalty": 3, "inf_penalty": 3},
          lambda i: [float(x) for x in local.token_split(i["rl_flops"], i["rl_penalty"], i["inf_penalty"])],
          "D ∝ 1/(flops * penalty): pre 6, RL 3*3, inference 2*3",
          seed="Seed: 'RL 2-6x less efficient'. Lecture: 2-6 is RL's FLOPs-per-token factor (vs 6 for pre-training); "
               "the inefficiency is a separate ~30% MFU (~3x)."),
    Claim("L16", "Scale-up/scale-out ratio per pipeline stage, (k, layers) = (8,1), (2,1), (2,2)", "§2.8",
          [2.0, 0.5, 1.0], '"the product of these three things to be bigger than 8"', Tol("exact"),
          {"cases": [[8, 1], [2, 1], [2, 2]], "bandwidth_ratio": 8},
          lambda i: [float(local.scaleup_over_scaleout(k, ell, i["bandwidth_ratio"]))
                     for k, ell in i["cases"]], "2 k l / 8 (>= 1: the rack hop is not the bottleneck)"),
    Claim("L17", "Pipelining: weight memory/GPU x 1/P, KV memory/GPU unchanged (P = 4 vs 1)", "§2.8", [0.25, 1.0],
          '"Those exactly cancel"', Tol("exact"),
          {"total_bytes": 1e12, "micro_batch": 2400, "context": 100e3, "bytes_per_token": 2048, "ep": 64, "stages": 4},
          _l17, "N_total/(E P) + b len bytes_tok / E, ratios at P vs P = 1"),
    Claim("L18", "DeepSeek experts per GPU on an NVL72 rack", "§2.7", 4, '"use 64 GPUs ... 4 experts per GPU"',
          Tol("exact"), {"num_experts": 256, "gpus": 72},
          lambda i: float(local.expert_layout(i["num_experts"], i["gpus"])[1]), "E / largest divisor <= GPUs"),
    Claim("L19", "Scale-up capacity of 8 Hoppers", "§2.7", 640e9, '"640 GB" (Dwarkesh)', Tol("exact"),
          {"chips": 8, "hbm_bytes": 80e9}, lambda i: float(local.scaleup_capacity(i["chips"], i["hbm_bytes"])),
          "chips * HBM"),
    Claim("L20", "Latency added by 4 pipeline stages", "§2.8", 0.010, '"from 20 to 30" ms', Tol("order"),
          {"stages": 4, "hop_s": 2.5e-3}, lambda i: float(local.pipeline_added_latency(i["stages"], i["hop_s"])),
          "P * t_hop"),
    Claim("L21", "Sparsity vs quality: 64 experts x 370M active ~ dense 1.3B", "§2.6", 3.5, '"64x for 4x"',
          Tol("rel", 0.15), {"dense_equivalent": 1.3e9, "active": 370e6},
          lambda i: i["dense_equivalent"] / i["active"], "dense-equivalent / active",
          seed="Seed: '64x total params for 4x active'. Lecture: '64x for 4x' cites the 64-expert/370M model "
               "matching a dense 1.3B (3.5x); 64 is the expert count."),
    Claim("L22", "Output/input price 5x => decode t_mem/t_compute", "§2.12", 5, '"That\'s right" (5x)',
          Tol("factor", 1.7), {"output_usd_per_mtok": 25, "input_usd_per_mtok": 5, "prefill_mfu": 1.0,
                               "R": 300, "sparsity": 8, "lecture_batch": 2000, "lecture_context": 200e3,
                               "lecture_crossover": 200e3},
          lambda i: float(ep.implied_decode_memory_over_compute(i["output_usd_per_mtok"], i["input_usd_per_mtok"],
                                                                i["prefill_mfu"])),
          "(out/in) / MFU_prefill", note=_l22_note),
    Claim("L23", "Price sheet: base input, 5-min write, cache hit (Claude Opus 4.6)", "§2.13", [5, 1.25, 0.1],
          '"$5", "$6.25", hit "about 1/10"', Tol("exact"), {"price_sheet": "claude-opus-4-6"}, _price_sheet,
          "[input $/M, write_5m / input, read / input] from catalog/prices"),
    Claim("L24", "Cache tier for a 5-minute and a 1-hour hold", "§2.13", "flash, disk",
          '"flash (5 min) and spinning disk (1 h)"', Tol("same"),
          {"hold_s": [300, 3600], "drain_s": {"hbm": 0.020, "ddr": 10 ** 0.5, "flash": 60.0, "disk": 3600.0}},
          _drain_rule, "tier whose drain time (cap/bw) is nearest the hold time",
          seed="Seed: '5-min caches in HBM, 1-hour in flash or disk'. Lecture: Reiner ends at flash (5 min) and "
               "spinning disk (1 h); HBM drains in ~20 ms, 'much too small'."),
    Claim("L25", "Unbatched penalty cost(B=1)/cost(B->inf), dense and sparsity 8", "§2.1", 1000,
          '"a thousand times worse"', Tol("order"), {"R": 300, "sparsity": [1, 8]},
          lambda i: [float(eb.unbatched_penalty(i["R"], s)) for s in i["sparsity"]], "R * sparsity (KV ignored)"),
    Claim("L26", "Weight-read latency floor, 1 TB: NVL72 vs 8 x H100", "§2.8", [1.74e-3, 37.3e-3],
          '"a little H100 box, the latency will be really high"', Tol("rel", 0.05),
          {"weight_bytes": 1e12, "systems": [[72, 8e12], [8, 3.35e12]]},
          lambda i: [float(local.weight_read_floor(i["weight_bytes"], n, bw)) for n, bw in i["systems"]],
          "N_total / (n * HBM_bw)"),
    Claim("L27", "$ per million tokens on a rack", "§2.1", 0.40, '"$2/hour per GPU"', Tol("rel", 0.05),
          {"chips": 72, "usd_per_chip_hour": 2.0, "step_s": 0.020, "batch": 2000},
          lambda i: float(ecost.usd_per_mtok(i["step_s"], i["batch"], i["chips"], i["usd_per_chip_hour"])),
          "n * $/s * t / B * 1e6"),
    Claim("L28", "Scale-up growth Hopper -> Blackwell", "§2.7", 8, '"a factor of 8"', Tol("rel", 0.15),
          {"hopper": 8, "blackwell": 72}, lambda i: i["blackwell"] / i["hopper"], "72 / 8"),
)
