"""The lecture's key claims re-asked of today's catalog hardware and models through the engine.

Each row: the claim it revisits, the setting, the lecture's figure, the real figure, their ratio, and whether the
real figure is within the claim's tolerance. ``closing_note`` lists the disagreements and by how much.
The deployments come from ``serve(model, system, kv_dtype=, batch=, context=, len_pass=)`` (the answer layer's
``answers.economics.lecture_serving``: the calibrated set on the best layout over the system's chips at those points),
so each setting names the layout it ran on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tokenomy.arch.params import count_params, kv_bytes_at_context, kv_bytes_per_token, weight_bytes
from tokenomy.catalog import loader
from tokenomy.econ import batch as eb
from tokenomy.econ import context as ec
from tokenomy.econ import kv_tiers as kt
from tokenomy.econ import latency as el
from tokenomy.econ import pricing as ep
from tokenomy.econ import speculative as es
from tokenomy.econ.cost import Serving
from tokenomy.lecture_claims.tolerance import Tol
from tokenomy.units import DTYPE_BYTES

SYSTEMS = ("gb200-nvl72", "hgx-h200-8")  # today's rack vs today's 8-GPU box
MODEL, KV_DTYPE, CONTEXT = "deepseek-v3", "fp8", 8192
R_CHIPS = ("a100-80gb-sxm", "h100-sxm", "h200", "b200", "gb200", "gb300", "rubin", "mi300x", "mi355x", "tpu-v4",
           "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7")
PRICE_SHEETS = ("claude-opus-4-6", "gemini-3-pro", "openai-gpt-5", "deepseek-v3-2")
BATCHES = tuple(2 ** i for i in range(15))  # the decode points a system's layout is chosen at (tokenomy batch's)
PREFIX, PREFIX_BATCH = 32768, 8
Serve = Callable[..., Serving]


@dataclass(frozen=True)
class RealRow:
    id: str  # the lecture claim revisited
    quantity: str
    setting: str
    lecture_value: float | str
    real_value: float | str | None
    tolerance: str
    agrees: bool | None
    ratio: float | None  # real / lecture
    unit: str = ""  # of both values (lecture_claims.claim_units' names)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _row(cid, quantity, setting, lecture, real, tol: Tol, unit: str) -> RealRow:
    num = isinstance(lecture, (int, float)) and isinstance(real, (int, float))
    ratio = real / lecture if num and lecture else None
    return RealRow(cid, quantity, setting, lecture, real, tol.text(), None if real is None else tol.ok(real, lecture),
                   ratio, unit)


def _native_ratio(chip) -> tuple[str, float]:
    """The largest R over bf16/fp8/fp4 with weights stored at that dtype (equal when each halving of width
    doubles the peak; a chip without a faster narrow path keeps its bf16 value)."""
    rs = {d: float(eb.lecture_ratio(chip.peak_flops_per_s[d], DTYPE_BYTES[d], chip.hbm_bytes_per_s))
          for d in ("bf16", "fp8", "fp4") if d in chip.peak_flops_per_s}
    if not rs:
        raise ValueError(f"chip {chip.name} has no bf16/fp8/fp4 peak")
    d = max(rs, key=lambda k: (round(rs[k], 6), k == "bf16"))
    return d, rs[d]


def ratio_rows() -> list[RealRow]:
    out = []
    for name in R_CHIPS:
        chip = loader.hardware(name).chip
        d, r = _native_ratio(chip)
        out.append(_row("L2", "R = (peak/2) bytes_w / HBM_bw", f"{chip.name} ({d})", 300, r, Tol("rel", 0.25), "FLOP/B"))
        out.append(_row("L6", "HBM drain time (s)", chip.name, 0.020, float(el.drain_time_s(chip.hbm_bytes,
                                                                                          chip.hbm_bytes_per_s)),
                        Tol("factor", 1.5), "s"))
    return out


def system_serving(serve: Serve, system: str) -> Serving:
    """DeepSeek-V3 decode on ``system`` at the lecture's context, laid out for the batch sweep."""
    return serve(MODEL, system, kv_dtype=KV_DTYPE, batch=list(BATCHES), context=[CONTEXT])


def system_rows(serve: Serve, system: str) -> list[RealRow]:
    sv = system_serving(serve, system)
    s = eb.summarize_batch(sv, CONTEXT)
    at = f"{sv.label()}, context {CONTEXT}, KV {KV_DTYPE}, {sv.eff.name}"
    op = f"{at}, batch {s.operating_batch}"
    p = count_params(sv.model)
    rows = [
        _row("L1", "sparsity N_total/N_active", MODEL, 8, p.total / p.active, Tol("rel", 0.25), "x"),
        _row("L1", "balance batch (weight fetch = weight compute)", at, 2400, s.balance_batch, Tol("rel", 0.25), "sequences"),
        _row("L25", "unbatched penalty cost(B=1)/floor, KV ignored", at, 1000, s.unbatched_penalty_no_kv, Tol("order"), "x"),
        _row("L25", "unbatched penalty at this context", at, 1000, s.unbatched_penalty, Tol("order"), "x"),
        _row("L4", "one unit's tokens/s at the operating batch", op, 128000, s.operating_tokens_per_s,
             Tol("rel", 0.30), "tok/s"),
        _row("L5", "share of 500M tok/s", op, 1e-3, None if s.operating_tokens_per_s is None else float(
            el.fraction_of_traffic(s.operating_tokens_per_s)), Tol("order"), "share"),
        _row("L7", "worst-case latency 2 x step (s)", op, 0.040, s.worst_case_latency_s, Tol("factor", 1.5), "s"),
        _row("L27", "$ per M output tokens at the operating batch", f"{op}, ${sv.price}/chip-h", 0.40,
             s.usd_per_mtok_at_operating, Tol("factor", 1.5), "$/Mtok"),
        _row("L26", "weight-read floor (s)", f"{MODEL} {weight_bytes(sv.model) / 1e9:.0f} GB on {sv.chips} chips",
             0.020, float(weight_bytes(sv.model) / (sv.chips * sv.hardware.hbm_bytes_per_s)), Tol("order"), "s"),
    ]
    c = ec.summarize_context(sv, s.operating_batch or 1)
    rows.append(_row("L8", "crossover context len* (large batch)", at.rsplit(", context", 1)[0], 200e3,
                     c.crossover_large_batch, Tol("factor", 2), "tokens"))
    prefill = serve(MODEL, system, kv_dtype=KV_DTYPE, batch=[1], context=[CONTEXT // 2], len_pass=CONTEXT // 2)
    pr = ep.price_ratio(sv, s.operating_batch or 1, CONTEXT, CONTEXT // 2, 1, prefill=prefill)
    rows.append(_row("L22", "predicted output/input cost ratio", op, 5, pr.output_over_input, Tol("factor", 1.7), "x"))
    if s.operating_batch:
        _, price = es.fast_mode_point(sv, s.operating_batch, CONTEXT, es.FAST_MODE_SPEED)
        rows.append(_row("§2.14", f"price multiplier of {es.FAST_MODE_SPEED:g}x speed by batch alone", op,
                         es.FAST_MODE_PRICE, price, Tol("factor", 1.5), "x"))
    return rows


def kv_rows() -> list[RealRow]:
    """KV bytes/token of real architectures (fp8, at a 200k context) against the lecture's ~2 KB."""
    out = []
    for name in ("deepseek-v3", "llama-3.1-70b", "gemma-3-27b", "gpt-oss-120b", "qwen3-235b-a22b", "kimi-k2"):
        m = loader.model(name)
        per_tok = kv_bytes_at_context(m, 200e3, KV_DTYPE) / 200e3
        out.append(_row("L9", "KV bytes/token at 200k (fp8; windows amortised)", m.name, 2048, per_tok, Tol("factor", 2), "B/token"))
    return out


def cache_rows(serve: Serve) -> list[RealRow]:
    tiers = kt.tiers_from_catalog()
    lecture_drain = {"hbm": 0.020, "ddr": 10 ** 0.5, "cxl": 10 ** 0.5, "local_flash": 60.0, "network_flash": 60.0,
                     "hdd": 3600.0}  # the lecture gives no figure for object storage
    out = [_row("L24", "drain time cap/bw (s)", t.name, lecture_drain[t.tier], t.drain_s, Tol("order"), "s")
           for t in tiers if t.tier in lecture_drain]
    prefix = PREFIX
    sv = serve(MODEL, "hgx-h200-8", kv_dtype=KV_DTYPE, batch=[PREFIX_BATCH], context=[prefix], len_pass=prefix)
    size = kv_bytes_per_token(sv.model, KV_DTYPE) * prefix
    tiers = [kt.hbm_tier(sv.hardware.chip, sv.price)] + [t for t in tiers if t.tier != "hbm"]
    remat = kt.remat_usd(sv, prefix, PREFIX_BATCH)
    for hold, lecture in ((300, "local-nvme"), (3600, "hdd")):
        names, _ = kt.cheapest(size, hold, tiers, remat)
        out.append(_row("L24", f"cheapest tier for a {hold:g} s hold (cost model)",
                        f"{MODEL} {prefix}-token prefix, 8 x h200", lecture, names[0], Tol("same"), "text"))
    for hold, published in ((300, 0.25), (3600, 1.0)):
        d = kt.implied_discounts(size, hold, tiers, remat)
        out.append(_row("L23", f"write premium for a {hold:g} s hold / base input", f"{d.tier}, device cost only",
                        published, d.write_premium_fraction, Tol("order"), "x"))
    for stall, how in ((0.0, "device cost only"), (1.0, "GPUs wait for the copy")):
        d = kt.implied_discounts(size, 300, tiers, remat, sv.chips * sv.price / 3600.0, stall)
        out.append(_row("L23", "cache-hit price / base input", f"{d.tier}, {how}", 0.1, d.hit_fraction, Tol("order"), "x"))
    return out


def price_rows() -> list[RealRow]:
    out = []
    for name in PRICE_SHEETS:
        try:
            p = loader.price_file(name)
        except ValueError:
            out.append(_row("L22", "output/input price", f"{name} (catalog file missing)", 4, None, Tol("factor", 1.34), "x"))
            continue
        out.append(_row("L22", "output/input price (3-5x)", p.model, 4, p.output_usd_per_mtok / p.input_usd_per_mtok,
                        Tol("factor", 1.34), "x"))
        if p.cache_read_usd_per_mtok:
            out.append(_row("L23", "cache read / input", p.model, 0.1, p.cache_read_usd_per_mtok / p.input_usd_per_mtok,
                            Tol("rel", 0.2), "x"))
        for stepped in p.long_context:
            out.append(_row("§2.11", f"input price step above {stepped.above_tokens:,} tokens", p.model, 1.5,
                            stepped.input_usd_per_mtok / p.input_usd_per_mtok, Tol("rel", 0.2), "x"))
    return out


def scale_rows() -> list[RealRow]:
    rack, box = loader.hardware("gb200-nvl72"), loader.hardware("hgx-h100-8")
    return [_row("L28", "scale-up growth (catalog)", "gb200-nvl72 / hgx-h100-8", 8,
                 rack.scale_up_domain_size / box.scale_up_domain_size, Tol("rel", 0.15), "x"),
            _row("L19", "HBM of one scale-up domain (bytes)", "hgx-h100-8", 640e9, box.num_chips * box.hbm_bytes,
                 Tol("rel", 0.01), "B"),
            _row("§2.7", "HBM of a Blackwell rack (bytes, '10-20 TB')", "gb200-nvl72", 15e12,
                 rack.num_chips * rack.hbm_bytes, Tol("factor", 1.5), "B")]


def real_rows(serve: Serve) -> list[RealRow]:
    rows = ratio_rows()
    for s in SYSTEMS:
        rows += system_rows(serve, s)
    return rows + kv_rows() + cache_rows(serve) + price_rows() + scale_rows()


def closing_note(rows: list[RealRow]) -> list[str]:
    """One line per disagreement: claim, setting, lecture vs real, factor."""
    out = []
    for r in rows:
        if r.agrees is False:
            by = f" ({r.ratio:.3g}x)" if r.ratio else ""
            out.append(f"{r.id} {r.quantity} [{r.setting}]: lecture {_fmt(r.lecture_value)}, real {_fmt(r.real_value)}{by}")
    return out


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
