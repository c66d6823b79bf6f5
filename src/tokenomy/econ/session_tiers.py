"""The KV tiers of one replica from the catalog: a policy's tiers (catalog/kv_tiering), the system's [host] table and
the storage devices' latency and price (catalog/storage through econ.kv_tiers).

    capacity (tokens)  tier bytes per node / chips per node / KV bytes per token per chip   (each chip its shard)
    read (s per token) KV bytes per token per chip x KV slots / the chip's read rate: DRAM over its host link
                       (PCIe Gen5 x16 or NVLink-C2C), NVMe at the node's drives' rate / chips per node
    $ per byte-hour    the storage device's (econ.kv_tiers.Tier.usd_per_byte_hour); HBM at the accelerator's rental
Defaults: DRAM_SHARE of the host's DRAM (the rest runs the host: engine process, pinned staging buffers, page cache;
LMCache's max_local_cpu_size is set by hand the same way), all of the local NVMe. A tier larger than the machine is
refused, naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack

DRAM_SHARE = 0.5
HOST_TIERS = ("ddr", "local_flash")


@dataclass(frozen=True)
class ReplicaTiers:
    stack: TierStack  # HBM first (its capacity set per point by the solver)
    bytes_per_token_chip: float  # KV bytes per token per chip
    chips: int  # chips of one replica
    node_bytes: dict  # tier -> bytes per node used
    usd_per_byte_s: dict  # tier -> $ per byte-second of holding
    policy: str


def replica_tiers(hw, policy: str | None, dram_bytes, nvme_bytes, bytes_per_token_chip: float, slots: float,
                  chips: int, prefill_s_per_token: float, gpu_usd_per_chip_s: float) -> ReplicaTiers:
    """The replica's TierStack (module docstring); ``policy`` None: HBM only (the engines' own prefix cache)."""
    from tokenomy.catalog import loader
    from tokenomy.econ.kv_tiers import tiers_from_catalog

    usd = {"hbm": gpu_usd_per_chip_s / float(hw.chip.exposed_hbm_bytes)}
    levels = [TierLevel("hbm", 0.0, 0.0)]
    if policy is None or policy == "none":
        for name, v in (("dram_bytes", dram_bytes), ("nvme_bytes", nvme_bytes)):
            if v is not None:
                raise ValueError(f"{name}: a tier below HBM needs kv_tiering (a policy: "
                                 f"{', '.join(loader.kv_tiering_names())})")
        return ReplicaTiers(TierStack(tuple(levels), prefill_s_per_token=prefill_s_per_token), bytes_per_token_chip,
                            chips, {}, usd, "none")
    pol = loader.kv_tiering(policy)
    host = hw.host
    if host is None:
        raise ValueError(f"kv_tiering: {hw.name} has no [host] table in the catalog (DRAM, NVMe per node); give a "
                         "system that has one (e.g. hgx-h100-8, gb200-nvl72)")
    devices = {t.tier: t for t in tiers_from_catalog(chip=hw.chip.name)}
    sizes = {"ddr": _size("dram_bytes", dram_bytes, host.dram_bytes * DRAM_SHARE, host.dram_bytes, hw.name),
             "local_flash": _size("nvme_bytes", nvme_bytes, host.nvme_bytes, host.nvme_bytes, hw.name)}
    rate = {"ddr": host.dram_to_chip_bytes_per_s, "local_flash": host.nvme_read_bytes_per_s / host.chips_per_node}
    node = {}
    for tier in pol.tiers[1:]:
        dev = devices.get(tier)
        if tier in HOST_TIERS:
            size, bw = sizes[tier], rate[tier]
        elif dev is not None:  # a remote store: its device per node, shared by the node's chips
            size, bw = dev.capacity_bytes, dev.read_bytes_per_s / host.chips_per_node
        else:
            continue
        if size <= 0:
            continue
        node[tier] = size
        lat = dev.latency_s if dev is not None else 0.0
        levels.append(TierLevel(tier, size / host.chips_per_node / bytes_per_token_chip,
                                bytes_per_token_chip * slots / bw, lat))
        if dev is not None:
            usd[tier] = dev.usd_per_byte_hour / 3600.0
    stack = TierStack(tuple(levels), pol.store, pol.load, prefill_s_per_token)
    return ReplicaTiers(stack, bytes_per_token_chip, chips, node, usd, pol.name)


def _size(field: str, given, default: float, most: float, system: str) -> float:
    if given is None:
        return float(default)
    x = float(given)
    if not x >= 0:
        raise ValueError(f"{field}: must be >= 0 bytes, got {given!r}")
    if x > most * (1 + 1e-9):
        raise ValueError(f"{field}: {x:.4g} B per node is more than {system}'s {most:.4g} B per node "
                         "(catalog/systems [host])")
    return x


def hold_usd_per_s(rt: ReplicaTiers, held_tokens: np.ndarray) -> np.ndarray:
    """$ per second of holding ``held_tokens`` [..., tier] on one replica (every chip its shard), below HBM: HBM's
    share is inside the chips' time, which the steady state already splits between the input misses and the
    output (counting it again would charge the accelerator twice)."""
    usd = np.array([0.0 if lv.tier == "hbm" else rt.usd_per_byte_s.get(lv.tier, 0.0) for lv in rt.stack.levels])
    return np.sum(np.asarray(held_tokens, float) * rt.bytes_per_token_chip * rt.chips * usd, axis=-1)
