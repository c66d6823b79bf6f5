"""The cache answer: where a cached KV prefix should live (HBM, host DRAM, SSD, ... by the chip's catalog tiers)
vs rematerialising it through a prefill, the implied cache prices, and the published prompt-caching prices."""

from __future__ import annotations

from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.econ_serving import ECONOMICS_KEYWORDS, _context, _pass_lines, deployment_request, serving
from tokenomy.answers.result import Result
from tokenomy.answers.variants import reports_hardware
from tokenomy.econ import kv_tiers as kt

HOLDS = (0.01, 1, 10, 60, 300, 3600, 86400)


def published_cache_rows() -> list[dict]:
    """Published prompt-caching prices over each sheet's base input price."""
    from tokenomy.catalog import loader

    rows = []
    for n in loader.price_names():
        p = loader.price_file(n)
        f = lambda v: None if v is None else v / p.input_usd_per_mtok  # noqa: E731
        rows.append({"price_sheet": n, "write_5m_over_base": f(p.cache_write_5m_usd_per_mtok),
                     "write_1h_over_base": f(p.cache_write_1h_usd_per_mtok), "read_over_base": f(p.cache_read_usd_per_mtok)})
    return rows


def published_price_rows(first: str | None = None) -> list[dict]:
    """Each price sheet's published $ per M input tokens on a cache miss (its base input price), on a cache hit
    (``cache_read_usd_per_mtok``) and per M output tokens, with its source and date: what a workload's $/Mtok split
    (input miss / input hit / output) is read beside. ``first``: the sheet of that name leads (the model served)."""
    from tokenomy.catalog import loader

    rows = []
    for n in loader.price_names():
        p = loader.price_file(n)
        rows.append({"price_sheet": n, "provider": p.provider, "model": p.model,
                     "usd_per_mtok_input_miss": p.input_usd_per_mtok, "usd_per_mtok_input_hit": p.cache_read_usd_per_mtok,
                     "usd_per_mtok_output": p.output_usd_per_mtok, "source": p.source, "as_of": p.as_of.isoformat()})
    return sorted(rows, key=lambda r: r["price_sheet"] != first)


@door(ECONOMICS_KEYWORDS)
@reports_hardware
def cache(*, model=None, hardware=None, chips=None, prefix_tokens=32768, hold=HOLDS, stall=0.0, prefill_batch=1,
          **kw) -> Result:
    """KV cache tiers: where a cached prefix should live, vs rematerialising it, and implied cache prices.
    The rematerialising prefill runs on the best layout for that prefill."""
    from tokenomy.arch.params import kv_bytes_at_context

    P, pb = inputs.optional("prefix_tokens", prefix_tokens), inputs.optional("prefill_batch", prefill_batch)
    holds = [inputs.number("hold", h) for h in (hold if isinstance(hold, (list, tuple)) else [hold])]
    if not holds:
        raise ValueError("hold: needs hold times in seconds, e.g. 300,3600")
    st = inputs.number("stall", stall)
    sv = serving(deployment_request(model, hardware, chips, kw), [pb], [P], len_pass=P)
    size = kv_bytes_at_context(sv.model, P, sv.kv_dtype)
    remat = kt.remat_usd(sv, P, pb)
    tiers = [kt.hbm_tier(sv.hardware.chip, sv.price)] + [t for t in kt.tiers_from_catalog(chip=sv.hardware.chip.name)
                                                         if t.tier != "hbm"]
    gpu = sv.chips * sv.price / 3600.0
    names, costs = kt.cheapest(size, holds, tiers, remat, gpu, st)
    rule = kt.drain_rule_choice(holds, [t.drain_s for t in tiers], [t.name for t in tiers])
    hold_rows = []
    for h, nm, c, r in zip(holds, names, costs, rule):
        dsc = kt.implied_discounts(size, h, tiers, remat, gpu, st)
        hold_rows.append({"hold_s": h, "cheapest": nm, "cheapest_usd": float(c), "drain_rule_tier": r,
                          "remat_usd": remat, "cheapest_caching_tier": dsc.tier, "hit_over_base": dsc.hit_fraction,
                          "write_premium_over_base": dsc.write_premium_fraction})
    extra = {"prefix_tokens": P, "prefix_bytes": size, "remat_usd": remat,
             "tiers": kt.tier_rows(size, holds[0], tiers, remat, gpu, st),
             "envelope": kt.envelope(size, tiers, remat, gpu, st), "published": published_cache_rows(),
             **_context(sv)}
    derivation = (f"[bold]{sv.header()}: {P}-token prefix = {size / 1e9:.3g} GB[/bold]",
                  "  hold(T) = bytes/capacity * tier $/s * T; retrieve = bytes/bandwidth * (tier $/s + stall*GPU $/s)",
                  f"  rematerialise = prefill cost = ${remat:.4g}; drain rule: the tier whose cap/bw is nearest T",
                  "  the rematerialising prefill through the engine:", *_pass_lines(sv, pb, P, P))
    return Result("cache", f"cached prefix: {sv.header()}", tuple(hold_rows),
                  ("hold_s", "cheapest", "cheapest_usd", "drain_rule_tier", "remat_usd", "hit_over_base",
                   "write_premium_over_base"), extra, derivation=derivation, rows_key="holds")

