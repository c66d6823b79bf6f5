"""Figures of the KV tiers page, from ``tokenomy serve --workload ... --dram-bytes ...`` rows (answers.workloads:
one row per DRAM size) as plain plotly figure dicts. No computation beyond unit scaling.

    rows -> hit_vs_dram   (token hit rate, in all and served from each tier, vs host DRAM per node)
         -> ttft_by_turn  (mean TTFT of the main agent's k-th turn, one line per DRAM size; simulate rows)
         -> cost_split    ($ per M input-miss, input-hit and output tokens at each DRAM size)
"""

from __future__ import annotations

from tokenomy.plots.serving import _layout, _line

TIER_NAMES = {"hbm": "HBM", "ddr": "host DRAM", "cxl": "CXL", "local_flash": "local NVMe",
              "network_flash": "network flash", "hdd": "HDD", "object": "object store"}


def _gib(row: dict) -> float:
    """Host DRAM in GiB (the grammar's G: 64G = 64 x 2^30 bytes)."""
    return (row.get("dram_bytes") or 0.0) / 2**30


def hit_vs_dram(rows: list[dict], title: str = "Hit rate vs host DRAM") -> dict:
    x = [_gib(r) for r in rows]
    data = [_line(x, [100 * r["hit_rate"] for r in rows], "all tiers")]
    for key in rows[0]:
        if key.startswith("hit_") and key != "hit_rate" and key[4:] in TIER_NAMES:
            data.append(_line(x, [100 * (r.get(key) or 0.0) for r in rows], TIER_NAMES[key[4:]],
                              line={"dash": "dot"}))
    lay = _layout(title, "host DRAM per node for the KV cache (GiB)", "input tokens served from cache (%)",
                  xlog=False, ylog=False)
    lay["yaxis"]["range"] = [0, 100]
    return {"data": data, "layout": lay}


def ttft_by_turn(rows: list[dict], title: str = "TTFT by turn") -> dict:
    data = [_line(list(range(1, len(r["ttft_by_turn"]) + 1)), r["ttft_by_turn"], f"{_gib(r):.4g} GiB DRAM")
            for r in rows if r.get("ttft_by_turn")]
    return {"data": data, "layout": _layout(title, "turn of the session's main agent", "mean TTFT (s)",
                                            xlog=False, ylog=True)}


def cost_split(rows: list[dict], title: str = "$ per M tokens: input miss, input hit, output") -> dict:
    x = [f"{_gib(r):.4g} GiB" for r in rows]
    parts = (("usd_per_mtok_input_miss", "input miss (computed)"), ("usd_per_mtok_input_hit", "input hit (cached)"),
             ("usd_per_mtok_output", "output"))
    data = [{"type": "bar", "x": x, "y": [r.get(k) for r in rows], "name": name} for k, name in parts]
    lay = _layout(title, "host DRAM per node for the KV cache", "$ per million tokens", xlog=False, ylog=True)
    lay["barmode"] = "group"
    lay["xaxis"]["type"] = "category"
    return {"data": data, "layout": lay}
