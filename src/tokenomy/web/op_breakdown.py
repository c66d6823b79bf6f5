"""The Serve page's per-op and per-layer-kind breakdown of one pass (issue 30, LLM-Viewer's per-layer table), from
the engine's own terms (core/op_costs: each op shape's work and its kernel terms under the deployment's efficiency
set, busiest chip, one micro-batch).

Per op: FLOPs and bytes (weights, KV, activations), intensity I = F/B, the roofline time max(F/peak, B/BW) (what
the plot places it at), the engine's compute term and memory term, its kernel time max(compute, memory), the bound
(the larger) and its share of the kernels' time; per layer: the same over ``count`` layers. Per kind (matmul,
attention, expert, embed): the ops of that kind summed. Rows of either table add up to the pass's compute and
memory terms (core/op_costs' module docstring); communication, launch floors and host time are the step's
(the critical path above).
"""

from __future__ import annotations

SUMMED = ("flops", "bytes", "weight_bytes", "kv_bytes", "act_bytes", "roofline_s", "compute_s", "memory_s", "time_s")


def op_rows(ops, peak_flops_per_s: float, hbm_bytes_per_s: float) -> list[dict]:
    """One row per op shape (module docstring); ``share``: of the kernels' time summed over the ops."""
    ridge = peak_flops_per_s / hbm_bytes_per_s
    rows = []
    for o in ops:
        i = o.flops / o.bytes if o.bytes else None
        compute, memory = o.compute_s or 0.0, o.memory_s or 0.0
        rows.append({"op": o.name, "kind": o.kind, "count": o.count, "flops": o.flops, "bytes": o.bytes,
                     "weight_bytes": o.weight_bytes, "kv_bytes": o.kv_bytes, "act_bytes": o.act_bytes,
                     "intensity": i, "roofline_s": max(o.flops / peak_flops_per_s, o.bytes / hbm_bytes_per_s),
                     "compute_s": compute, "memory_s": memory, "time_s": max(compute, memory),
                     "per_layer_s": max(compute, memory) / max(o.count, 1),
                     "bound": "-" if i is None or not o.flops else ("compute" if compute >= memory else "memory"),
                     "roofline_bound": "-" if i is None or not o.flops else ("compute" if i >= ridge else "memory")})
    _shares(rows)
    return rows


def kind_rows(rows: list[dict]) -> list[dict]:
    """The op rows summed by kind, in the order kinds first appear; layers: the most layers of an op of the kind."""
    out: dict[str, dict] = {}
    for r in rows:
        k = out.setdefault(r["kind"], {"kind": r["kind"], "ops": 0, "layers": 0, **dict.fromkeys(SUMMED, 0.0)})
        k["ops"] += 1
        k["layers"] = max(k["layers"], r["count"])
        for f in SUMMED:
            k[f] += r[f]
    kinds = list(out.values())
    for k in kinds:
        k["bound"] = "compute" if k["compute_s"] >= k["memory_s"] else "memory"
        k["intensity"] = k["flops"] / k["bytes"] if k["bytes"] else None
    _shares(kinds)
    return kinds


def _shares(rows: list[dict]) -> None:
    total = sum(r["time_s"] for r in rows) or 1.0
    for r in rows:
        r["share"] = r["time_s"] / total
