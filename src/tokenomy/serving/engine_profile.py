"""A serving engine as data: its scheduler's budget and caps, KV blocks and HBM share, CUDA-graph sizes, default KV
dtypes, all-reduce and overlaps (``EngineProfile``), built from catalog/engines/<name>.toml (``profile_of``); the
version from which an engine overlaps its scheduler's CPU work (``overlaps_host``)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class EngineProfile:
    name: str
    version: str
    chunked_prefill: bool
    max_num_tokens: int
    max_batch: int
    block_size: int
    hbm_fraction: float
    fraction_of: str  # "total" | "free"
    cuda_graph_sizes: tuple[int, ...] = ()
    kv_dtype_default: str = "bf16"  # the cache dtype the engine picks ('auto') for weights not in kv_dtype_by_weight
    kv_dtype_by_weight: tuple[tuple[str, str], ...] = ()
    all_reduce: str = ""  # the engine's TP all-reduce, in words (catalog/engines [all_reduce])
    host_overlap: float = 0.0  # h: 1 where the scheduler's CPU work overlaps the GPU's step (core/efficiency.py)
    ep_overlap: float = 0.0  # ε: 1 under two-batch overlap of the MoE dispatch + combine
    ep_sm: tuple[float, float] = (0.0, 0.0)  # (s_n, s_ll): the SMs its dispatch/combine kernels hold (normal, low-latency)
    reserve_output: bool = False  # admission reserves the whole ISL + OSL of KV blocks (TensorRT-LLM GUARANTEED_NO_EVICT)
    tokenize_s_per_token: float = 0.0  # the API server's host seconds per prompt token (catalog/engines [frontend])

    def on(self, eff):
        """The efficiency set as this engine runs it: the chip's terms with the engine's host and EP overlap."""
        return eff.with_(host_overlap=self.host_overlap, ep_overlap=self.ep_overlap, ep_sm_normal=self.ep_sm[0],
                         ep_sm_low_latency=self.ep_sm[1])

    def kv_dtype_for(self, weight_dtype: str) -> str:
        """The KV-cache dtype this engine picks by default for a checkpoint of ``weight_dtype``."""
        return dict(self.kv_dtype_by_weight).get(weight_dtype, self.kv_dtype_default)

    def label(self) -> str:
        return (f"{self.name} {self.version}: budget {self.max_num_tokens} tokens/step, max batch {self.max_batch}, "
                f"{'chunked' if self.chunked_prefill else 'whole-prompt'} prefill, KV blocks of {self.block_size}, "
                f"{self.hbm_fraction:g} of {'total' if self.fraction_of == 'total' else 'free'} HBM")


def profile_of(f, tp: int = 1, max_num_tokens: int | None = None, max_batch: int | None = None,
               version: str | None = None) -> EngineProfile:
    """The EngineProfile of a catalog engine file (catalog.schema.EngineFile), with the HBM share the engine
    sets for ``tp`` (kv_cache.by_tp: the largest TP key <= tp) and optional scheduler overrides; ``version``: the
    engine version run (the file's own by default), which decides whether its overlap scheduler is on."""
    kv, sch = f.kv_cache, f.scheduler
    frac = kv.hbm_fraction
    for k in sorted(kv.by_tp, key=int):
        if tp >= int(k):
            frac = kv.by_tp[k]
    return EngineProfile(f.name, f.version, sch.chunked_prefill, int(max_num_tokens or sch.max_num_tokens),
                         int(max_batch or sch.max_batch), kv.block_size, frac, kv.fraction_of,
                         tuple(f.cuda_graphs.batch_sizes), f.kv_dtype.default,
                         tuple(sorted(f.kv_dtype.by_weight.items())), _all_reduce(f.all_reduce),
                         *overlaps(f.host.overlap_since, version or f.version, f.overlap.two_batch_overlap),
                         (f.overlap.sm_share_normal, f.overlap.sm_share_low_latency), sch.reserve_output,
                         f.frontend.tokenize_s_per_token if f.frontend is not None else 0.0)


def _release(version: str) -> tuple[int, ...]:
    """'0.5.12' -> (0, 5, 12): a version's numeric release parts, for ordering."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def overlaps(overlap_since: str | None, version: str, two_batch_overlap: bool) -> tuple[float, float]:
    """(h, ε) of an engine at ``version``: its scheduler's overlap (``overlaps_host``) and two-batch overlap, as the
    efficiency set takes them (EngineProfile.on; the calibrated set of answers/resolve.py)."""
    return float(overlaps_host(overlap_since, version)), float(two_batch_overlap)


def overlaps_host(overlap_since: str | None, version: str) -> bool:
    """Whether the engine at ``version`` overlaps its scheduler's CPU work with the GPU by default: from
    ``overlap_since`` on (catalog/engines [host]; None: never by default)."""
    if overlap_since is None:
        return False
    return _release(version) >= _release(overlap_since)


def _all_reduce(a) -> str:
    """The profile's all-reduce in one line: what runs, the largest message its custom kernels take, on which groups."""
    cap = f"; custom kernels up to {a.custom_max_bytes / 2**20:g} MiB" if a.custom_max_bytes else ""
    sizes = f", groups of {'/'.join(map(str, a.world_sizes))}" if a.world_sizes else ""
    return f"{a.implementation}{cap}{sizes}"
