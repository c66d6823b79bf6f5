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
An MoE dispatch run as DeepEP's normal kernels sends each token once per destination domain and rank, not once
per expert (``routed_shares``: the shares of what the token-expert assignments carry that each level moves).
All-reduce inside one scale-up domain may instead run as a one-shot or two-shot custom all-reduce (``shot_terms``,
what TensorRT-LLM, vLLM and SGLang ship for decode-sized messages); the fastest algorithm is taken (``Fastest``).
Every function broadcasts over numpy arrays of ``group``, ``nbytes`` and ``stride``; a group of 1 costs 0. Byte
counts, link bandwidths and latencies may be quantities with units (e.g. pint's; tests/dims).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy import units
from tokenomy.specs import Topology


_f = units.floats  # float arrays (a quantity keeps its units)


@dataclass(frozen=True)
class Cost:
    """A collective's time as pieces alpha_i + beta_i·nbytes that run concurrently: t = max_i(...).
    Built once per group (plan-shaped arrays) and applied to many byte counts (plan x batch)."""

    pieces: tuple[tuple[np.ndarray, np.ndarray], ...]  # (seconds, seconds per byte)

    def __call__(self, nbytes):
        b = _f(nbytes)
        t = None
        for alpha, beta in self.pieces:
            x = alpha + beta * b
            t = x if t is None else np.maximum(t, x)
        return t


def ring_terms(g, bytes_per_s, latency_s, phases: float = 1.0):
    """``phases`` passes at one level (1 = all-gather or reduce-scatter, 2 = all-reduce): (alpha, beta)."""
    g = _f(g)
    on = g > 1
    steps = np.ceil(np.log2(np.maximum(g, 1.0)))
    return (np.where(on, phases * steps * latency_s, 0.0),
            np.where(on, phases * (g - 1) / np.maximum(g, 1.0) / bytes_per_s, 0.0))


def ring(g, nbytes, bytes_per_s, latency_s, phases: float = 1.0):
    return Cost((ring_terms(g, bytes_per_s, latency_s, phases),))(nbytes)


def _levels(topo: Topology, group, stride):
    g = _f(group)
    g_in = topo.chips_in_domain(g, stride)
    return g, g_in, np.ceil(g / g_in), topo.up_bytes_per_s(g_in)


def _hierarchical(topo: Topology, group, stride, phases: float, levels=None) -> Cost:
    g, g_in, g_out, bw_up = _levels(topo, group, stride) if levels is None else levels
    a1, b1 = ring_terms(g_in, bw_up, topo.scale_up.latency_s, phases)
    a2, b2 = ring_terms(g_out, topo.scale_out.bytes_per_s, topo.scale_out.latency_s, phases)
    return Cost(((a1 + a2, b1 + b2 / g_in),))  # the outer ring carries nbytes/g_in


@dataclass(frozen=True)
class Fastest:
    """Alternative algorithms for one collective; an auto-tuned library runs the fastest: t = min_k(cost_k)."""

    costs: tuple[Cost, ...]

    def __call__(self, nbytes):
        t = None
        for c in self.costs:
            x = c(nbytes)
            t = x if t is None else np.minimum(t, x)
        return t


def shot_terms(g, bytes_per_s, latency_s):
    """The custom all-reduces serving engines run inside one NVLink domain (TensorRT-LLM AllReduceStrategy
    ONESHOT/TWOSHOT under AUTO; vLLM's and SGLang's custom_all_reduce 1-stage/2-stage; each rank reads its peers'
    buffers over P2P, flashinfer.comm docs): (alpha, beta) of
        one-shot:  alpha + (g-1)·nbytes/beta          every rank pulls every peer's whole buffer, one step
        two-shot:  2·alpha + 2(g-1)/g·nbytes/beta     reduce-scatter then all-gather, one step each
    Against a ring's 2·ceil(log2 g) latency steps they win small (decode-sized) messages; beyond, two-shot has the
    ring's bandwidth term in two steps."""
    g = _f(g)
    on = g > 1
    one = (np.where(on, latency_s, 0.0), np.where(on, (g - 1) / bytes_per_s, 0.0))
    two = (np.where(on, 2.0 * latency_s, 0.0), np.where(on, 2.0 * (g - 1) / np.maximum(g, 1.0) / bytes_per_s, 0.0))
    return one, two


def all_reduce_cost(topo: Topology, group, stride=1, ring_share=1.0) -> Fastest:
    """The fastest of the hierarchical ring (NCCL) and, for a group inside one peer-to-peer scale-up domain
    (Topology.peer_to_peer: NVLink, Infinity Fabric; not a TPU torus), the one-shot and two-shot custom
    all-reduces (``shot_terms``). ``ring_share``: the ring's scale-up bandwidth over the P2P kernels' (NCCL's
    NVLS reaches the link's rate where P2P loads reach less: core/efficiency.py η_nccl/η_link)."""
    levels = _levels(topo, group, stride)
    g, g_in, g_out, bw_up = levels
    ring_cost = _hierarchical(topo, group, stride, 2.0, (g, g_in, g_out, bw_up * ring_share))
    inside = (g_out <= 1) & topo.peer_to_peer
    # a group that leaves the domain (or a torus) has no P2P shot: infinite latency, never chosen
    shots = tuple(Cost(((np.where(inside, a, np.inf * units.SECOND), b),))
                  for a, b in shot_terms(g_in, bw_up, topo.scale_up.latency_s))
    return Fastest((ring_cost,) + shots)


def all_gather_cost(topo: Topology, group, stride=1) -> Cost:
    return _hierarchical(topo, group, stride, 1.0)


def all_to_all_shares(topo: Topology, group, stride=1):
    """(scale-up, scale-out) shares of what one chip sends that cross each level when every member gets an equal
    part: (g_in-1)/g and (g-g_in)/g (its own part stays)."""
    g, g_in, _, _ = _levels(topo, group, stride)
    return (g_in - 1) / g, (g - g_in) / g


def reached(units, experts_per_tok, n_group=1, topk_group=1):
    """Expected distinct units (ranks, or domains) a token's k experts sit on, X units each holding an equal
    contiguous share of the experts: X·(1 − (1 − 1/X)^k) (k independent uniform picks; the exact draw without
    replacement gives 3.61 for DeepSeek-V3 on 4 domains, this 3.60), at most the group limit where groups and units
    align: topk_group·max(X/n_group, 1) units when n_group divides X or X divides n_group (hierarchical EPLB packs
    whole groups onto nodes: github.com/deepseek-ai/EPLB), none otherwise (a group straddles units). The router
    picks each group for its strongest experts, so the chosen groups are nearly all used: min(expectation, limit)
    (iid scores through DeepSeek-V3's router: 3.97 groups of the 4 allowed, against 4 and 5.25 uncapped)."""
    X = np.maximum(_f(units), 1.0)
    k, n, top = (_f(v) for v in (experts_per_tok, n_group, topk_group))
    with np.errstate(divide="ignore"):  # one unit (X = 1): log 0 = -inf, and the token reaches it
        spread = X * -np.expm1(k * np.log1p(-1.0 / X))
    aligned = (np.mod(X, n) == 0) | (np.mod(n, X) == 0)
    return np.minimum(spread, np.where(aligned, top * np.maximum(X / n, 1.0), X))


def routed_shares(topo: Topology, group, stride, experts_per_tok, n_group=1, topk_group=1):
    """(scale-up, scale-out) link copies per token-expert assignment of an MoE dispatch as DeepEP's normal kernels
    run it (internode: RDMA to the peer of the same local index on each destination node, which forwards over
    NVLink; one copy per destination rank, its experts share it; DeepSeek-V3 report §3.2.2) over g ranks in
    G = ceil(g/g_in) domains of g_in. Per token (``reached``: R ranks of g, N domains of G):
        scale-out: N·(G−1)/G   each destination domain once; by symmetry a token's own domain is one of the N
                               with probability N/G (routing does not see where the token is)
        scale-up:  R·(g_in−1)/g_in   each destination rank once, less the one per domain that received it (the
                               source itself at home): G of the g ranks, R·G/g of them touched
    each over the assignments' k copies. The combine is the mirror image (each rank sums its experts' outputs, the
    receiving peer the node's, one copy back per domain): the same copies."""
    g, g_in, G, _ = _levels(topo, group, stride)
    k = np.maximum(_f(experts_per_tok), 1.0)
    ranks, domains = reached(g, k, n_group, topk_group), reached(G, k, n_group, topk_group)
    return ranks * (g_in - 1.0) / g_in / k, domains * (G - 1.0) / G / k


def all_to_all_cost(topo: Topology, group, stride=1, shares=None) -> Cost:
    """``shares``: (scale-up, scale-out) shares of ``nbytes`` each level carries; default ``all_to_all_shares``."""
    g, g_in, g_out, bw_up = _levels(topo, group, stride)
    up, out = topo.scale_up, topo.scale_out
    up_share, out_share = all_to_all_shares(topo, group, stride) if shares is None else shares
    return Cost(((np.where(g_in > 1, up.latency_s, 0.0), up_share / bw_up),
                 (np.where(g_out > 1, out.latency_s, 0.0), out_share / out.bytes_per_s)))


def all_reduce(topo: Topology, group, nbytes, stride=1):
    return all_reduce_cost(topo, group, stride)(nbytes)


def all_gather(topo: Topology, group, nbytes, stride=1):
    """``nbytes`` is the gathered (full) buffer on each chip."""
    return all_gather_cost(topo, group, stride)(nbytes)


def reduce_scatter(topo: Topology, group, nbytes, stride=1):
    """``nbytes`` is the full buffer each chip starts with; the mirror of all-gather, same cost."""
    return all_gather_cost(topo, group, stride)(nbytes)


def all_to_all(topo: Topology, group, nbytes, stride=1):
    """``nbytes``: what one chip sends in total, an equal share to every member (its own share stays)."""
    return all_to_all_cost(topo, group, stride)(nbytes)


def p2p(topo: Topology, nbytes, crosses_domain, latency_s=None):
    """One message of ``nbytes`` between two chips; over scale-out where ``crosses_domain``.
    ``latency_s`` overrides the link latency (e.g. the lecture's few-ms software hop)."""
    up, out = topo.scale_up, topo.scale_out
    x = np.asarray(crosses_domain, dtype=bool)
    alpha = np.where(x, out.latency_s, up.latency_s) if latency_s is None else _f(latency_s)
    return alpha + _f(nbytes) / np.where(x, out.bytes_per_s, up.bytes_per_s)


COLLECTIVES = {"all-reduce": all_reduce, "all-gather": all_gather, "reduce-scatter": reduce_scatter,
               "all-to-all": all_to_all}
