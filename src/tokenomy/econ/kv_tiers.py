"""Where a cached prefix should live: hold cost vs retrieve cost per memory tier (lecture §2.13).

For a prefix of P tokens at b bytes/token (S = P·b bytes), a tier with capacity Cap, read bandwidth BW and
rental $/s of one device:
    hold(T)   = S/Cap · $/s · T                   (the fraction of the device the prefix occupies, for T)
    retrieve  = S/BW · ($/s + stall·GPU $/s)      (the device busy reading it; optionally the GPUs waiting;
                                                   0 for HBM, which decode reads anyway)
    total(T)  = hold(T) + retrieve;   rematerialise = the prefill's cost (hold = 0)
BW is what one GPU reads the tier at: min(the memory's bandwidth, the link into the GPU), e.g. host DDR5 at
~600 GB/s behind a PCIe Gen5 x16 port (~64 GB/s per direction) is a 64 GB/s tier (catalog/storage/*.toml ``link``).
Equal device-time for holding and retrieving ⇔ T = Cap/BW: the "drain time" rule (HBM ≈ 20 ms, DDR ≈ 1-10 s,
flash ≈ 1 min, disk ≈ 1 h ⇒ 5-minute caches on flash, 1-hour caches on disk). Under the full cost model the
cheapest tier also depends on each tier's $/byte; both are computed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.specs import Chip

TIER_ORDER = ("hbm", "ddr", "cxl", "local_flash", "network_flash", "hdd", "object")
REMAT = "rematerialise"


@dataclass(frozen=True)
class Tier:
    """One device of a memory tier (SI units). ``read_bytes_per_s`` is the effective rate into a GPU (already
    capped by the link); ``memory_bytes_per_s`` and ``link_bytes_per_s`` keep the two figures it came from."""

    name: str
    tier: str
    capacity_bytes: float
    read_bytes_per_s: float
    usd_per_hour: float
    latency_s: float = 0.0
    source: str = ""
    memory_bytes_per_s: float | None = None
    link_bytes_per_s: float | None = None
    link: str = ""

    @property
    def bound_by(self) -> str:
        """"link" when the path into the GPU, not the memory, sets the read rate."""
        lk, mem = self.link_bytes_per_s, self.memory_bytes_per_s
        return "link" if lk is not None and (mem is None or lk < mem) else "memory"

    @property
    def drain_s(self) -> float:
        return self.capacity_bytes / self.read_bytes_per_s

    @property
    def usd_per_byte_hour(self) -> float:
        return self.usd_per_hour / self.capacity_bytes


def effective_read_bytes_per_s(memory_bytes_per_s, link_bytes_per_s=None):
    """BW = min(memory bandwidth, link bandwidth per direction): a tier is read no faster than its path into
    the GPU (PCIe Gen5 x16 ~64e9 B/s, NVLink-C2C 450e9 B/s). No link: the memory's own figure."""
    mem = np.asarray(memory_bytes_per_s, float)
    return mem if link_bytes_per_s is None else np.minimum(mem, np.asarray(link_bytes_per_s, float))


def tiers_from_catalog(names=None, chip: str | None = None) -> list[Tier]:
    """Storage catalog files (catalog/storage/*.toml) as tiers, ordered from HBM down; each read at
    min(its bandwidth, its link's). With ``chip``, host tiers are the ones of that chip's host (a file's ``hosts``:
    x86 DDR5 over PCIe for HGX parts, Grace LPDDR5X over NVLink-C2C for GB200/GB300)."""
    from tokenomy.catalog import loader

    files = [loader.storage_file(n) for n in (names or loader.storage_names())]
    if chip is not None:
        files = [f for f in files if not f.hosts or chip in f.hosts]
    files.sort(key=lambda f: TIER_ORDER.index(f.tier))
    out = []
    for f in files:
        lk = f.link.bytes_per_s_per_direction if f.link else None
        bw = float(effective_read_bytes_per_s(f.read_bytes_per_s, lk))
        src = f.source + (f"; link: {f.link.source}" if f.link else "")
        out.append(Tier(f.name, f.tier, f.capacity_bytes, bw, f.usd_per_hour, f.latency_s, src,
                        f.read_bytes_per_s, lk, f.link.technology if f.link else ""))
    return out


def hbm_tier(chip: Chip, usd_per_hour: float) -> Tier:
    """The serving chip's own HBM as a tier, priced at the whole accelerator's rental (as the lecture does)."""
    return Tier(f"hbm ({chip.name})", "hbm", chip.hbm_bytes, chip.hbm_bytes_per_s, usd_per_hour, 0.0,
                "catalog/chips/" + chip.name, chip.hbm_bytes_per_s)


def tier_costs(prefix_bytes, hold_s, tiers: list[Tier], gpu_usd_per_s: float = 0.0, stall: float = 0.0):
    """Array [tier, hold time] of total cost in $ = hold + retrieve (broadcasts over ``hold_s``)."""
    S, T = float(prefix_bytes), np.asarray(hold_s, float)
    cap = np.array([t.capacity_bytes for t in tiers])[:, None]
    bw = np.array([t.read_bytes_per_s for t in tiers])[:, None]
    usd_s = np.array([t.usd_per_hour for t in tiers])[:, None] / 3600.0
    hold = S / cap * usd_s * np.atleast_1d(T)[None, :]
    # A prefix already in HBM is read by decode anyway: retrieving it costs nothing extra (lecture: "≈ 0").
    in_hbm = np.array([t.tier == "hbm" for t in tiers])[:, None]
    retrieve = np.where(in_hbm, 0.0, S / bw * (usd_s + stall * gpu_usd_per_s))
    return hold + retrieve


def retrieve_cost(prefix_bytes, tier: Tier, gpu_usd_per_s: float = 0.0, stall: float = 0.0) -> float:
    return float(tier_costs(prefix_bytes, 0.0, [tier], gpu_usd_per_s, stall)[0, 0])


def hold_cost_per_s(prefix_bytes, tier: Tier) -> float:
    return float(prefix_bytes) / tier.capacity_bytes * tier.usd_per_hour / 3600.0


def cheapest(prefix_bytes, hold_s, tiers: list[Tier], remat_usd: float, gpu_usd_per_s=0.0, stall=0.0):
    """(names per hold time, cost per hold time): the cheapest tier, rematerialisation included."""
    costs = tier_costs(prefix_bytes, hold_s, tiers, gpu_usd_per_s, stall)
    allc = np.vstack([costs, np.full((1, costs.shape[1]), float(remat_usd))])
    names = [t.name for t in tiers] + [REMAT]
    idx = np.argmin(allc, axis=0)
    return [names[i] for i in idx], allc[idx, np.arange(allc.shape[1])]


def break_even_s(prefix_bytes, a: Tier, b: Tier, gpu_usd_per_s=0.0, stall=0.0) -> float | None:
    """Hold time above which the cheaper-to-hold tier ``b`` beats ``a``: (retrieve_b − retrieve_a)/(hold_a − hold_b).
    None when one tier is cheaper (or dearer) at every hold time."""
    ha, hb = hold_cost_per_s(prefix_bytes, a), hold_cost_per_s(prefix_bytes, b)
    ra, rb = (retrieve_cost(prefix_bytes, t, gpu_usd_per_s, stall) for t in (a, b))
    if ha == hb:
        return None
    t = (rb - ra) / (ha - hb)
    return float(t) if t > 0 else None


def max_hold_s(prefix_bytes, tier: Tier, remat_usd: float, gpu_usd_per_s=0.0, stall=0.0) -> float | None:
    """Longest hold for which caching in ``tier`` beats rematerialising; None if never."""
    r = retrieve_cost(prefix_bytes, tier, gpu_usd_per_s, stall)
    return (remat_usd - r) / hold_cost_per_s(prefix_bytes, tier) if r < remat_usd else None


def drain_rule_choice(hold_s, drain_s, names):
    """The lecture's rule: the tier whose drain time is nearest the hold time (in log space)."""
    d = np.log(np.asarray(drain_s, float))[:, None] - np.log(np.atleast_1d(np.asarray(hold_s, float)))[None, :]
    return [names[i] for i in np.argmin(np.abs(d), axis=0)]


@dataclass(frozen=True)
class Discounts:
    """Cache prices implied by the cost model, as fractions of the base input price (= rematerialisation)."""

    hold_s: float
    tier: str
    hit_fraction: float  # retrieve / remat: what a cache read should cost relative to base input
    write_premium_fraction: float  # hold(T) / remat: the surcharge a write for T should carry


def implied_discounts(prefix_bytes, hold_s, tiers: list[Tier], remat_usd: float, gpu_usd_per_s=0.0,
                      stall=0.0) -> Discounts:
    """For a hold time, the cheapest caching tier and the hit/write prices it implies relative to base input."""
    costs = tier_costs(prefix_bytes, hold_s, tiers, gpu_usd_per_s, stall)[:, 0]
    i = int(np.argmin(costs))
    r = retrieve_cost(prefix_bytes, tiers[i], gpu_usd_per_s, stall)
    return Discounts(float(hold_s), tiers[i].name, r / remat_usd, (costs[i] - r) / remat_usd)


def tier_rows(prefix_bytes, hold_s, tiers: list[Tier], remat_usd: float, gpu_usd_per_s=0.0, stall=0.0) -> list[dict]:
    """Per tier: drain time, $/byte-hour, hold and retrieve cost, total at ``hold_s``, break-even vs remat."""
    total = tier_costs(prefix_bytes, hold_s, tiers, gpu_usd_per_s, stall)[:, 0]
    rows = []
    for t, tot in zip(tiers, total):
        rows.append({"tier": t.name, "kind": t.tier, "capacity_bytes": t.capacity_bytes,
                     "read_bytes_per_s": t.read_bytes_per_s, "memory_bytes_per_s": t.memory_bytes_per_s,
                     "link_bytes_per_s": t.link_bytes_per_s, "link": t.link, "bound_by": t.bound_by,
                     "drain_s": t.drain_s,
                     "usd_per_byte_hour": t.usd_per_byte_hour,
                     "hold_usd_per_s": hold_cost_per_s(prefix_bytes, t),
                     "retrieve_usd": retrieve_cost(prefix_bytes, t, gpu_usd_per_s, stall),
                     "retrieve_s": prefix_bytes / t.read_bytes_per_s + t.latency_s,
                     "total_usd": float(tot), "vs_remat": float(tot) / remat_usd,
                     "max_hold_s": max_hold_s(prefix_bytes, t, remat_usd, gpu_usd_per_s, stall),
                     "source": t.source})
    rows.append({"tier": REMAT, "kind": "compute", "capacity_bytes": None, "read_bytes_per_s": None,
                 "memory_bytes_per_s": None, "link_bytes_per_s": None, "link": "", "bound_by": None, "drain_s": None,
                 "usd_per_byte_hour": None, "hold_usd_per_s": 0.0, "retrieve_usd": remat_usd, "retrieve_s": None,
                 "total_usd": remat_usd, "vs_remat": 1.0, "max_hold_s": None, "source": "engine prefill"})
    return rows


def envelope(prefix_bytes, tiers: list[Tier], remat_usd: float, gpu_usd_per_s=0.0, stall=0.0,
             lo_s: float = 1e-3, hi_s: float = 30 * 86400.0) -> list[dict]:
    """The cheapest option over hold times [lo, hi] as segments {tier, from_s, to_s}; the edges are the
    break-even times (exact, from the straight cost lines)."""
    grid = np.geomspace(lo_s, hi_s, 4000)
    names, _ = cheapest(prefix_bytes, grid, tiers, remat_usd, gpu_usd_per_s, stall)
    by_name = {t.name: t for t in tiers}
    segs: list[dict] = []
    for i, nm in enumerate(names):
        if segs and segs[-1]["tier"] == nm:
            continue
        start = float(grid[i])
        if segs:
            a, b = segs[-1]["tier"], nm
            if b == REMAT:
                start = max_hold_s(prefix_bytes, by_name[a], remat_usd, gpu_usd_per_s, stall) or start
            elif a != REMAT:
                start = break_even_s(prefix_bytes, by_name[a], by_name[b], gpu_usd_per_s, stall) or start
            segs[-1]["to_s"] = start
        segs.append({"tier": nm, "from_s": start, "to_s": None})
    segs[0]["from_s"] = None  # from zero
    return segs


def remat_usd(sv, prefix_tokens: float, batch: float = 1.0) -> float:
    """$ to recompute a prefix's KV with a prefill on ``sv`` (a ``econ.cost.Serving``: its layout and efficiency set),
    per sequence."""
    t = sv.terms(float(batch), float(prefix_tokens), float(prefix_tokens))
    if not bool(np.ravel(t.fits)[0]):
        raise ValueError(f"prefix_tokens: a prefill of {prefix_tokens:g} tokens x batch {batch:g} has no answer on "
                         f"{sv.label()}: {t.why(0)}")
    return float(np.ravel(t.usd_per_mtok)[0]) * float(prefix_tokens) / 1e6


def cost_curves(prefix_bytes, tiers: list[Tier], remat_usd: float, hold_s=None, gpu_usd_per_s=0.0,
                stall=0.0) -> dict:
    """Total cost per tier over hold times (for plots.serving.tier_costs_vs_hold)."""
    h = np.geomspace(1e-3, 30 * 86400.0, 120) if hold_s is None else np.asarray(hold_s, float)
    c = tier_costs(prefix_bytes, h, tiers, gpu_usd_per_s, stall)
    return {"hold_s": h.tolist(), "tiers": {t.name: c[i].tolist() for i, t in enumerate(tiers)},
            "remat_usd": float(remat_usd)}
