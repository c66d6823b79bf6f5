"""Left only for ``parallel/moe.py``'s import of ``experts_touched``; the pass itself is core/engine.py.

Delete this file once parallel/moe.py takes its experts-touched count from the engine (engine._expert_load) or
holds the lecture's closed form itself.
"""

from __future__ import annotations


def experts_touched(tokens, num_experts, experts_per_tok):
    """Expected distinct experts one MoE layer reads when ``tokens`` tokens each pick k of E uniformly:
    E·(1 − (1 − k/E)^T). T=1 gives k; T→∞ gives E. (Balls-in-bins; real routers are less uniform.)"""
    return num_experts * (1.0 - (1.0 - experts_per_tok / num_experts) ** tokens)
