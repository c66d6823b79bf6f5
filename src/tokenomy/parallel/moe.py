"""Expert parallelism on a rack, and the lecture's MoE conclusions as computations (lecture §2.7-2.8).

    placement         the largest EP degree <= the scale-up domain that divides E: 256 experts on 72 GPUs -> 64 x 4
    dispatch/combine  each token's D activations go to k experts and come back: 2 all-to-alls of T·k·D·bytes/ep
    two racks         the (g - g_in)/g share of that traffic crosses scale-out, which binds ("one rack bounds
                      the size of an expert layer")
    latency floor     t = N_total bytes / (chips x HBM bw): pipelining adds capacity, a larger scale-up domain
                      adds bandwidth (1 TB: NVL72 1.74 ms vs 8xH100 37.3 ms, lecture §4.1 L26)
    per-GPU memory    N_total/(E·P) + b·len·bytes_tok/E: pipelining shrinks weights, never KV (L17)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.core.engine import experts_touched
from tokenomy.core import collectives as col
from tokenomy.parallel.topology import Topology


@dataclass(frozen=True)
class Placement:
    num_experts: int
    domain_size: int
    ep: int  # chips holding experts
    experts_per_chip: int
    idle_chips: int  # chips of the domain left without experts


def placement(num_experts: int, domain_size: int) -> Placement:
    """Experts spread evenly over the largest divisor of E that fits in one scale-up domain."""
    if num_experts <= 0 or domain_size <= 0:
        raise ValueError("num_experts and domain_size must be positive integers")
    ep = max(d for d in range(1, min(num_experts, domain_size) + 1) if num_experts % d == 0)
    return Placement(num_experts, domain_size, ep, num_experts // ep, domain_size - ep)


def dispatch_bytes_per_chip(tokens, experts_per_tok, hidden_size, ep, act_bytes=2.0):
    """Bytes one EP rank sends in one dispatch (the combine sends as many back): its T/ep tokens x k copies x D."""
    return np.asarray(tokens, dtype=float) / ep * experts_per_tok * hidden_size * act_bytes


def experts_touched_per_chip(tokens, num_experts, experts_per_tok, ep):
    """Distinct experts one rank's weights are read for when T tokens route uniformly: touched(T)/ep."""
    return experts_touched(np.asarray(tokens, dtype=float), num_experts, experts_per_tok) / ep


def ep_layer_s(topo: Topology, ep, tokens, experts_per_tok, hidden_size, act_bytes=2.0, stride=1):
    """Dispatch + combine time of one MoE layer over ``ep`` ranks holding ``tokens`` tokens in all."""
    nbytes = dispatch_bytes_per_chip(tokens, experts_per_tok, hidden_size, ep, act_bytes)
    return 2.0 * col.all_to_all(topo, ep, nbytes, stride)


@dataclass(frozen=True)
class RackSpan:
    """One MoE layer's dispatch + combine with EP inside one domain vs spread over ``domains`` domains."""

    ep_one: int
    ep_span: int
    one_domain_s: float
    spanning_s: float
    scale_out_share: float  # share of the dispatched bytes that cross scale-out when spanning

    @property
    def slowdown(self) -> float:
        return self.spanning_s / self.one_domain_s


def rack_span(topo: Topology, tokens_per_chip: float, experts_per_tok: int, hidden_size: int, *, ep_per_domain: int,
              domains: int = 2, act_bytes: float = 2.0) -> RackSpan:
    """Hold tokens per chip fixed and grow EP from one domain to ``domains`` domains of ``ep_per_domain`` chips."""
    t = replace(topo, scale_up=replace(topo.scale_up, chips=float(ep_per_domain)))
    one = float(ep_layer_s(t, ep_per_domain, tokens_per_chip * ep_per_domain, experts_per_tok, hidden_size,
                           act_bytes))
    g = ep_per_domain * domains
    span = float(ep_layer_s(t, g, tokens_per_chip * g, experts_per_tok, hidden_size, act_bytes))
    return RackSpan(ep_per_domain, g, one, span, (g - ep_per_domain) / g)


def latency_floor_s(weight_bytes, chips, hbm_bytes_per_s, stages=1):
    """Lower bound on a decode step: every weight read once per token, P stages one after another, each
    stage's chips reading W/P: P·(W/P)/(chips·bw) = W/(chips·bw). Pipelining (P) does not lower it."""
    P = np.asarray(stages, dtype=float)
    return P * (np.asarray(weight_bytes, dtype=float) / P) / (np.asarray(chips, dtype=float) * hbm_bytes_per_s)


def lecture_memory_per_chip(total_weight_bytes, micro_batch, context, kv_bytes_per_token, ep, stages):
    """(weights, KV) per GPU = (N_total/(E·P), b·len·bytes_tok/E) with B = P·b sequences (lecture §2.8)."""
    E, P = np.asarray(ep, dtype=float), np.asarray(stages, dtype=float)
    B = P * np.asarray(micro_batch, dtype=float)
    return (np.asarray(total_weight_bytes, dtype=float) / (E * P),
            B * np.asarray(context, dtype=float) * kv_bytes_per_token / (E * P))
