"""Terms the fit does not move: each chip's measured HBM streaming share, all-reduce kernel latency and NCCL bus
bandwidth, from cited microbenchmarks.

A decode step streams its weights at what a STREAM-like copy reaches on the chip (η_hbm = measured / datasheet
bytes/s, catalog/efficiency/streaming.toml, each entry with its source). Fitting η_hbm instead lets it stand in
for the per-layer kernel floor and the KV gathers (a fit gave 0.68 on H200 and 0.40 on B200 against ~0.9
measured), which fits one set of cases and misses the next. Likewise a tensor-parallel all-reduce shot takes what
its kernel takes alone at a decode-sized message (α_AR, catalog/efficiency/allreduce.toml: 5.75 us on 8 H100):
fitted, α had stood for a per-collective wait (15-30 us) that engines replaying decode under CUDA graphs do not
show. A ring / NVLS all-reduce of a prefill-sized message runs at NCCL's measured bus bandwidth
(η_nccl = busbw / link bandwidth, catalog/efficiency/busbw.toml: ~480 GB/s on 8 H100, 1.0 of the link). A chip
without a measurement takes the mean of the chips that have one (stated as derived in its efficiency file's note).
A GEMM's K-loop fill and epilogue (c steps per output tile, catalog/efficiency/gemm_depth.toml: 3.5 on DeepGEMM's
H800 table) is a kernel's, the same in every calibrated set: fitted, it would trade with η_max.
The request overhead around the engine (o_req, catalog/efficiency/frontend.toml: a minimal frontend's measured
1.8 ms) is held for every chip alike: it belongs to the serving stack, not the chip, and fitted per chip across
sources it took up what those sources' TTFTs lacked (3 -> 46 ms with the TensorRT-LLM 0.14 online table held
out). A user's own calibration still refits it (``ANCHORED_FIELDS`` lists the per-chip measurements only). The
per-sequence host time o_seq is held at 0 per chip: it belongs to the engine's runtime (catalog/engines [host]
runtimes, core/engine_terms.EngineTerms.on); one per-chip o_seq for every runtime was fitted on TensorRT-LLM
1.0's Python batches of ~3,000 and charged to vLLM's and to the C++ executor's (a user's calibration may fit an extra).
"""

from __future__ import annotations

from functools import lru_cache

from tokenomy.catalog import loader

STREAMING, ALLREDUCE, BUSBW, FRONTEND = "streaming", "allreduce", "busbw", "frontend"  # catalog/efficiency/<name>.toml
GEMM_DEPTH = "gemm_depth"
ANCHORED_FIELDS = ("hbm_fraction", "allreduce_latency_s", "nccl_link_fraction")
HELD_FIELDS = (*ANCHORED_FIELDS, "request_overhead_s", "sequence_overhead_s")  # what the catalog fit holds: the
# above, o_req, and the chip's own o_seq at 0 (each engine runtime's is its profile's: catalog/engines [host] runtimes)


@lru_cache(maxsize=1)
def streaming_fractions() -> dict[str, float]:
    """chip -> measured streaming bandwidth / datasheet bandwidth, for the chips with a cited measurement."""
    data = loader.read_toml("efficiency", STREAMING)
    out = {chip: float(entry["measured_bytes_per_s"]) / float(entry["datasheet_bytes_per_s"])
           for chip, entry in data.items()}
    bad = [c for c, f in out.items() if not 0.0 < f < 1.0]
    if bad:  # a share of 1 or more is a typo, and the fit's logit of it would be infinite
        raise ValueError(f"{STREAMING}.toml: {', '.join(bad)}: measured_bytes_per_s must be below datasheet_bytes_per_s")
    return out


@lru_cache(maxsize=1)
def gemm_fill_steps() -> float:
    """c: the K-loop steps' worth of fill and epilogue per GEMM output tile (core.efficiency.Efficiency
    .gemm_half_depth), fitted to DeepGEMM's published H800 table (catalog/efficiency/gemm_depth.toml); every calibrated
    set carries it, no fit moves it."""
    c = loader.read_toml("efficiency", GEMM_DEPTH).get("fill_steps")
    if c is None:
        raise ValueError(f"{GEMM_DEPTH}.toml: fill_steps is missing (K-loop steps of fill and epilogue per tile)")
    c = float(c)
    if not 0.0 <= c < 64.0:  # more steps of fill than a 8,192-deep K-loop has is a slip (K_½ written for c)
        raise ValueError(f"{GEMM_DEPTH}.toml: fill_steps must be in [0, 64) K-loop steps, got {c}")
    return c


@lru_cache(maxsize=1)
def allreduce_latencies() -> dict[str, float]:
    """chip -> measured latency (s) of one decode-sized all-reduce kernel alone, for the chips with a measurement."""
    data = loader.read_toml("efficiency", ALLREDUCE)
    out = {chip: float(entry["latency_s"]) for chip, entry in data.items()}
    bad = [c for c, t in out.items() if not 0.0 < t < 1e-3]
    if bad:  # a latency of a millisecond or more is a unit slip (us written as s)
        raise ValueError(f"{ALLREDUCE}.toml: {', '.join(bad)}: latency_s must be in seconds, between 0 and 1e-3")
    return out


@lru_cache(maxsize=1)
def nccl_link_fractions() -> dict[str, float]:
    """chip -> measured NCCL all-reduce bus bandwidth / the chip's scale-up link bandwidth per direction, at most 1."""
    data = loader.read_toml("efficiency", BUSBW)
    out = {chip: min(1.0, float(e["busbw_bytes_per_s"]) / loader.hardware(chip).chip.scale_up.bytes_per_s)
           for chip, e in data.items()}
    bad = [c for c, f in out.items() if not 0.05 < f <= 1.0]
    if bad:  # a share this small is a unit slip (Gb/s written as GB/s, or per link for per chip)
        raise ValueError(f"{BUSBW}.toml: {', '.join(bad)}: busbw_bytes_per_s must be in bytes/s, per chip")
    return out


@lru_cache(maxsize=1)
def request_overhead_s() -> float:
    """o_req (s): the published per-request time around the engine (catalog/efficiency/frontend.toml)."""
    value = float(loader.read_toml("efficiency", FRONTEND)["request_overhead_s"])
    if not 0.0 < value < 0.1:  # a tenth of a second or more is a unit slip (ms written as s)
        raise ValueError(f"{FRONTEND}.toml: request_overhead_s must be in seconds, between 0 and 0.1")
    return value


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def pooled_fraction() -> float:
    """The mean measured share over the chips that have one: the anchor of a chip without a measurement."""
    return _mean(streaming_fractions().values())


def anchored(chip: str) -> dict[str, float]:
    """The anchored terms of ``chip`` ("pooled" for the prior every chip's fit starts from)."""
    lat = allreduce_latencies()
    nccl = nccl_link_fractions()
    return {"hbm_fraction": streaming_fractions().get(chip, pooled_fraction()),
            "allreduce_latency_s": lat.get(chip, _mean(lat.values())),
            "nccl_link_fraction": nccl.get(chip, _mean(nccl.values())),
            "request_overhead_s": request_overhead_s(), "sequence_overhead_s": 0.0}


def provenance(chip: str) -> str:
    """One line for the efficiency file: where the anchored η_hbm and α_AR came from."""
    f, lat = streaming_fractions(), allreduce_latencies()
    a = anchored(chip)
    eta = (f"hbm_fraction {f[chip]:.3f} anchored: measured streaming bandwidth (catalog/efficiency/streaming.toml)"
           if chip in f else f"hbm_fraction {a['hbm_fraction']:.3f} anchored: derived, the mean measured streaming "
           f"share of {', '.join(sorted(f))} (no measurement of {chip} in catalog/efficiency/streaming.toml)")
    us = a["allreduce_latency_s"] * 1e6
    ar = (f"allreduce_latency_s {us:.2f} us anchored: measured all-reduce kernel (catalog/efficiency/allreduce.toml)"
          if chip in lat else f"allreduce_latency_s {us:.2f} us anchored: derived, the mean measured kernel latency "
          f"of {', '.join(sorted(lat))} (no measurement of {chip} in catalog/efficiency/allreduce.toml)")
    nccl = nccl_link_fractions()
    bus = (f"nccl_link_fraction {a['nccl_link_fraction']:.3f} anchored: "
           + ("measured NCCL bus bandwidth (catalog/efficiency/busbw.toml)" if chip in nccl else
              f"derived, the mean of {', '.join(sorted(nccl))} (no measurement of {chip} in busbw.toml)"))
    req = (f"request_overhead_s {request_overhead_s() * 1e3:.1f} ms held: a minimal frontend's measured figure, the "
           "same for every chip (catalog/efficiency/frontend.toml)")
    seq = ("sequence_overhead_s 0 held: the per-sequence host time is each engine runtime's (catalog/engines [host] "
           "runtimes), not the chip's")
    return f"{eta}; {ar}; {bus}; {req}; {seq}"
