"""Scaling laws: Chinchilla-optimal tokens, the fitted loss law, and how over-trained a run is.

Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", arXiv 2203.15556:
    rule of thumb     D_Chinchilla = 20 · N                                   (Table 3: ~20 tokens per parameter)
    fitted law (§3.3, Approach 3, eq. 2)
                      L(N, D) = E + A / N^α + B / D^β,  E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28
    compute optimum under C = 6·N·D (eq. 4)
                      N_opt = G·(C/6)^a,  D_opt = (C/6)^b / G,  G = (αA / (βB))^(1/(α+β)),
                      a = β/(α+β), b = α/(α+β)
The fitted law's optimum is not 20 tokens/parameter (it gives ~93 at Chinchilla's 5.76e23 FLOPs, ~122 at 1e25;
Besiroglu et al. 2024, arXiv 2404.10102, show the published fit disagrees with the paper's own Approaches 1-2);
both are offered.
N is what the law was fitted on (dense models); for MoE the lecture uses active parameters (§2.10).
Pure functions over numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOKENS_PER_PARAM = 20.0


@dataclass(frozen=True)
class LossLaw:
    """L(N, D) = E + A/N^alpha + B/D^beta (nats per token)."""

    E: float = 1.69
    A: float = 406.4
    B: float = 410.7
    alpha: float = 0.34
    beta: float = 0.28


CHINCHILLA = LossLaw()


def chinchilla_tokens(n_params, tokens_per_param=TOKENS_PER_PARAM):
    """D_Chinchilla = 20·N (Hoffmann et al. 2022; lecture §2.10: 100e9 -> 2e12)."""
    return tokens_per_param * np.asarray(n_params, dtype=float)


def overtraining_factor(tokens, n_params, tokens_per_param=TOKENS_PER_PARAM):
    """Training tokens over the Chinchilla tokens: D / (20·N); 1 = Chinchilla-optimal, >1 over-trained."""
    return np.asarray(tokens, dtype=float) / chinchilla_tokens(n_params, tokens_per_param)


def loss(n_params, tokens, law: LossLaw = CHINCHILLA):
    """L(N, D) = E + A/N^α + B/D^β."""
    N, D = np.asarray(n_params, dtype=float), np.asarray(tokens, dtype=float)
    return law.E + law.A / N**law.alpha + law.B / D**law.beta


def compute_optimal(flops, law: LossLaw = CHINCHILLA):
    """(N_opt, D_opt) minimising L(N, D) subject to 6·N·D = C (Hoffmann et al. 2022 eq. 4)."""
    C = np.asarray(flops, dtype=float)
    s = law.alpha + law.beta
    G = (law.alpha * law.A / (law.beta * law.B)) ** (1 / s)
    return G * (C / 6) ** (law.beta / s), (C / 6) ** (law.alpha / s) / G


def tokens_for_loss(n_params, target_loss, law: LossLaw = CHINCHILLA):
    """D reaching ``target_loss`` at N parameters: (B / (L - E - A/N^α))^(1/β); inf where N alone cannot."""
    N, L = np.asarray(n_params, dtype=float), np.asarray(target_loss, dtype=float)
    gap = L - law.E - law.A / N**law.alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, (law.B / np.where(gap > 0, gap, 1.0)) ** (1 / law.beta), np.inf)


def check_loss_target(target_loss, law: LossLaw = CHINCHILLA) -> float:
    t = float(target_loss)
    if not np.isfinite(t) or t <= law.E:
        raise ValueError(f"target_loss: must exceed the irreducible loss E = {law.E}, got {target_loss}")
    return t
