"""Why a point of the pass engine has no time: the reason codes (``REASONS``, index 0 = valid and fits), the
binding terms' names (``BOUNDS``), and the sentence for one point (``why_not``)."""

from __future__ import annotations

import numpy as np

from tokenomy.units import fmt_bytes

BOUNDS = ("compute", "memory", "comms", "overhead", "pipeline hop")


REASONS = ("", "expert parallelism and redundant experts need an MoE model",
           "ep does not divide the routed + redundant experts",
           "the attention group (tp, or tp*ep without attn_dp) does not divide the attention heads",
           "the attention group and the KV heads: neither divides the other",
           "pp exceeds the number of layers", "batch must be a whole number of sequences",
           "batch smaller than dp x micro-batches (under 1 sequence each)",
           "fewer decode micro-batches than pipeline stages (stages idle)", "does not fit in HBM")


FITS_REASON = len(REASONS) - 1


FIRST_POINT_REASON = 6  # codes below it come from the layout alone, from it on from the batch or the memory


def at(x, shape: tuple[int, ...], i: int) -> float:
    """Element ``i`` (flat) of ``x`` broadcast to ``shape``."""
    return float(np.ravel(np.broadcast_to(x, shape))[i])


def why_not(r, layout, i: int) -> str | None:
    """One sentence on why point ``i`` (flat index) is invalid or does not fit; None if it is fine."""
    shape = r.shape
    g = lambda x: at(x, shape, i)  # noqa: E731
    code = int(g(r.reason))
    if code == 0:
        return None
    if code == FITS_REASON:
        return (f"does not fit: needs {fmt_bytes(g(r.memory_per_chip_bytes))} per chip (weights {fmt_bytes(g(r.weight_bytes_per_chip))}"
                f" + KV {fmt_bytes(g(r.kv_bytes_per_chip))} + activations {fmt_bytes(g(r.act_bytes_per_chip))}) > "
                f"{fmt_bytes(g(r.hbm_bytes))} usable HBM")
    return f"{REASONS[code]} ({layout.at(shape, i).label()}, batch {g(r.batch):g})"
