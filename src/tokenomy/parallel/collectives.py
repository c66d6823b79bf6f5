"""Alpha-beta times of collectives over a group of chips, hierarchical when the group spans domains.

At one level with g chips, alpha = link latency, beta = bytes/s per chip per direction (Thakur, Rabenseifner &
Gropp 2005: recursive doubling/halving, log2(g) latency steps, the bandwidth term of a ring):
    all-gather / reduce-scatter (``nbytes`` = the full buffer):  ceil(log2 g)·alpha + (g-1)/g · nbytes/beta
    all-reduce = reduce-scatter + all-gather (Rabenseifner):    2·ceil(log2 g)·alpha + 2(g-1)/g · nbytes/beta
    all-to-all (``nbytes`` = what one chip sends, spread evenly):  alpha + (g-1)/g · nbytes/beta
    point-to-point:                                                 alpha + nbytes/beta
(Pope et al. 2022 §2 drops the (g-1)/g factor and alpha.)
A group of g chips with g_in per domain over g_out = ceil(g/g_in) domains runs hierarchically:
    all-reduce:  reduce-scatter inside (g_in), all-reduce of nbytes/g_in across (g_out), all-gather inside
    all-gather:  all-gather of nbytes/g_in across, then inside;  reduce-scatter: the mirror image
    all-to-all:  the (g_in-1)/g share moves on scale-up while the (g-g_in)/g share crosses scale-out at the
                 same time; the slower link binds (lecture §2.7: two racks send half the tokens over the slow one)
Every function broadcasts over numpy arrays of ``group``, ``nbytes`` and ``stride``; a group of 1 costs 0.
"""

from __future__ import annotations

import numpy as np

from tokenomy.parallel.topology import Topology


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def ring(g, nbytes, bytes_per_s, latency_s, phases: float = 1.0):
    """``phases`` passes at one level (1 = all-gather or reduce-scatter, 2 = all-reduce)."""
    g = _f(g)
    steps = np.ceil(np.log2(np.maximum(g, 1.0)))
    return np.where(g > 1, phases * (steps * latency_s + (g - 1) / np.maximum(g, 1) * _f(nbytes) / bytes_per_s), 0.0)


def _levels(topo: Topology, group, stride):
    g = _f(group)
    g_in = topo.chips_in_domain(g, stride)
    return g, g_in, np.ceil(g / g_in), topo.up_bytes_per_s(g_in)


def all_reduce(topo: Topology, group, nbytes, stride=1):
    g, g_in, g_out, bw_up = _levels(topo, group, stride)
    up, out = topo.scale_up, topo.scale_out
    return (ring(g_in, nbytes, bw_up, up.latency_s, 2.0)
            + ring(g_out, _f(nbytes) / g_in, out.bytes_per_s, out.latency_s, 2.0))


def all_gather(topo: Topology, group, nbytes, stride=1):
    """``nbytes`` is the gathered (full) buffer on each chip."""
    g, g_in, g_out, bw_up = _levels(topo, group, stride)
    up, out = topo.scale_up, topo.scale_out
    return (ring(g_in, nbytes, bw_up, up.latency_s)
            + ring(g_out, _f(nbytes) / g_in, out.bytes_per_s, out.latency_s))


def reduce_scatter(topo: Topology, group, nbytes, stride=1):
    """``nbytes`` is the full buffer each chip starts with; the mirror of all-gather, same cost."""
    return all_gather(topo, group, nbytes, stride)


def all_to_all(topo: Topology, group, nbytes, stride=1):
    """``nbytes``: what one chip sends in total, an equal share to every member (its own share stays)."""
    g, g_in, g_out, bw_up = _levels(topo, group, stride)
    up, out = topo.scale_up, topo.scale_out
    b = _f(nbytes)
    t_up = np.where(g_in > 1, up.latency_s + (g_in - 1) / g * b / bw_up, 0.0)
    t_out = np.where(g_out > 1, out.latency_s + (g - g_in) / g * b / out.bytes_per_s, 0.0)
    return np.maximum(t_up, t_out)


def p2p(topo: Topology, nbytes, crosses_domain, latency_s=None):
    """One message of ``nbytes`` between two chips; over scale-out where ``crosses_domain``.
    ``latency_s`` overrides the link latency (e.g. the lecture's few-ms software hop)."""
    up, out = topo.scale_up, topo.scale_out
    x = np.asarray(crosses_domain, dtype=bool)
    alpha = np.where(x, out.latency_s, up.latency_s) if latency_s is None else _f(latency_s)
    return alpha + _f(nbytes) / np.where(x, out.bytes_per_s, up.bytes_per_s)


COLLECTIVES = {"all-reduce": all_reduce, "all-gather": all_gather, "reduce-scatter": reduce_scatter,
               "all-to-all": all_to_all}
