"""A parallel layout: how a model's weights, KV cache and tokens are split over chips.

n = tp·ep·pp·dp chips: dp replicas, each a pipeline of pp stages, each stage a group of g = tp·ep chips.
    tp                 tensor parallelism of attention and dense layers (and of each expert)
    ep                 expert parallelism: the routed experts (plus ``redundant_experts`` replicas of hot experts,
                       DeepSeek's EPLB) spread over ep ranks, (E + r)/ep slots each
    attn_dp            DeepSeek-style data-parallel attention beside EP: ep replicas of a tp-way attention split,
                       sequences sharded over them (default: on whenever ep > 1)
    kv_batch           KV batch-sharded over the attention group beyond its KV heads (Pope et al. 2022 §3.3)
    microbatches       decode micro-batches in flight (default pp, the lecture's minimum with no idle stage)
    ideal              the even split of every weight and KV byte over n chips with no communication: a bound
                       that no layout reaches, available only when asked for by name
Every field may be a numpy array (a grid of layouts); validity is a mask computed by the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True)
class Layout:
    """Degrees of parallelism (ints or arrays that broadcast)."""

    tp: object = 1
    ep: object = 1
    pp: object = 1
    dp: object = 1
    attn_dp: object = None
    kv_batch: object = False
    microbatches: object = None
    redundant_experts: object = 0
    ideal: object = False

    @classmethod
    def even_split(cls, chips: int) -> "Layout":
        """The ideal even split over ``chips`` chips (a bound, not a layout any engine runs)."""
        return cls(tp=int(chips), ideal=True)

    @property
    def chips(self):
        return np.asarray(self.tp) * np.asarray(self.ep) * np.asarray(self.pp) * np.asarray(self.dp)

    def at(self, shape: tuple[int, ...], i: int) -> "Layout":
        """The scalar layout at flat index ``i`` of a result of ``shape``."""
        return self.each(shape, [i])[0]

    def each(self, shape: tuple[int, ...], indices) -> list["Layout"]:
        """The scalar layouts at the flat ``indices`` of a result of ``shape`` (each field broadcast once)."""
        flat = [None if v is None else np.ravel(np.broadcast_to(np.asarray(v), shape))
                for v in (getattr(self, f.name) for f in fields(self))]
        return [Layout(*(None if v is None else v[i].item() for v in flat)) for i in indices]

    def label(self) -> str:
        """'tp8 ep1 pp1 dp1' (+ attn-dp/attn-tp when ep > 1, + redundant experts, + kv-batch) for a scalar layout."""
        if bool(self.ideal):
            return f"ideal even split over {int(self.tp)} (no layout reaches it)"
        ep = int(self.ep)
        s = f"tp{int(self.tp)} ep{ep} pp{int(self.pp)} dp{int(self.dp)}"
        if ep > 1:
            s += " attn-tp" if self.attn_dp is False else " attn-dp"
        if int(self.redundant_experts or 0):
            s += f" +{int(self.redundant_experts)} redundant experts"
        return s + (" kv-batch" if self.kv_batch else "")

    def as_dict(self) -> dict:
        """The JSON ``plan`` object of a scalar layout."""
        ep = int(self.ep)
        return {"label": self.label(), "tp": int(self.tp), "ep": ep, "pp": int(self.pp), "dp": int(self.dp),
                "attn_dp": bool(ep > 1 and self.attn_dp is not False), "kv_batch": bool(self.kv_batch),
                "redundant_experts": int(self.redundant_experts or 0),
                "microbatches": int(self.microbatches) if self.microbatches is not None else int(self.pp),
                "ideal": bool(self.ideal), "chips": int(self.chips)}
