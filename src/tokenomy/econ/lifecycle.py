"""What a model costs over its life: pre-training + RL + inference, the size that minimises it, and the inverse.

Lecture §2.10 ([T][FC]), in FLOPs at pre-training efficiency:
    C_pre = 6 · N · D_pre
    C_RL  = f_RL · N · D_RL  · p_RL        (f_RL = 2..6 FLOPs per parameter per token, p_RL = 1/efficiency ≈ 3)
    C_inf = 2 · N · D_inf · p_inf          (forward only; decode runs ~3x below pre-training MFU)
    $ = C · usd_per_chip_hour / (3600 · peak · MFU_pre)
Forward problem (``optimise``): D_inf = demand · period is given, quality is a Chinchilla loss target L*
(econ/scaling.py), so each N needs D_pre(N) = tokens_for_loss(N, L*) and D_RL = r · D_pre; choose N
minimising the total. Inverse (``infer_from_inference``): with the lecture's equalised costs
6·D_pre = f_RL·p_RL·D_RL = 2·p_inf·D_inf, observed inference volume gives D_pre and D_RL (cases L11-L15):
D_pre = (2·3/6)·D_inf = D_inf and D_RL = 6·D_pre/(3·3) = 0.667·D_pre, over-training D_pre/(20·N) ≈ 100x.
N is the active parameter count throughout (the lecture's N_active).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.econ.scaling import CHINCHILLA, LossLaw, check_loss_target, loss, overtraining_factor, tokens_for_loss
from tokenomy.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

STAGES = ("pretraining", "rl", "inference")


@dataclass(frozen=True)
class Penalties:
    """FLOPs per parameter per RL token, and how many times less efficient than pre-training RL and inference run."""

    rl_flops_factor: float = 3.0  # the middle of 2..6 (lecture flashcards)
    rl_penalty: float = 3.0  # ~30% relative efficiency ([T] "in the range of 30%")
    inference_penalty: float = 3.0

    def __post_init__(self) -> None:
        if not 2 <= self.rl_flops_factor <= 6:
            raise ValueError(f"rl_flops_factor: {self.rl_flops_factor:g} is outside 2..6")
        if self.rl_penalty < 1 or self.inference_penalty < 1:
            raise ValueError("rl_penalty and inference_penalty: must be >= 1 (1 = as efficient as pre-training)")


@dataclass(frozen=True)
class Lifecycle:
    """Tokens, effective FLOPs and dollars by stage (arrays over candidate sizes, or scalars at the optimum)."""

    n_active: object
    d_pre: object
    d_rl: object
    d_inf: object
    flops_pre: object
    flops_rl: object
    flops_inf: object
    usd_pre: object
    usd_rl: object
    usd_inf: object
    usd_total: object
    overtraining: object  # D_pre / (20·N)
    loss: object  # Chinchilla loss at (N, D_pre)

    def shares(self) -> tuple:
        return tuple(np.asarray(x) / self.usd_total for x in (self.usd_pre, self.usd_rl, self.usd_inf))


def inference_tokens(tokens_per_s, period_s):
    """D_inf = rate · period (L11: 500e6 tok/s for 60 days = 2.59e15)."""
    return np.asarray(tokens_per_s, dtype=float) * np.asarray(period_s, dtype=float)


def usd_per_flop(usd_per_chip_hour, peak_flops_per_s, mfu):
    """Dollars per FLOP delivered at MFU: price / (3600 · peak · MFU)."""
    return usd_per_chip_hour / (SECONDS_PER_HOUR * peak_flops_per_s * mfu)


def lifecycle_costs(n_active, d_pre, d_rl, d_inf, usd_per_pretraining_flop, pen: Penalties = Penalties(),
                    law: LossLaw = CHINCHILLA) -> Lifecycle:
    """The three stage costs for given sizes and token counts (module docstring)."""
    N, Dp, Dr, Di = (np.asarray(x, dtype=float) for x in (n_active, d_pre, d_rl, d_inf))
    fp, fr, fi = 6 * N * Dp, pen.rl_flops_factor * N * Dr * pen.rl_penalty, 2 * N * Di * pen.inference_penalty
    u = usd_per_pretraining_flop
    return Lifecycle(N, Dp, Dr, Di, fp, fr, fi, fp * u, fr * u, fi * u, (fp + fr + fi) * u,
                     overtraining_factor(Dp, N), loss(N, Dp, law))


def optimise(demand_tokens_per_s, period_s, target_loss, usd_per_pretraining_flop, *,
             rl_tokens_per_pretrain_token=2 / 3, pen: Penalties = Penalties(), law: LossLaw = CHINCHILLA,
             n_grid=None) -> tuple[Lifecycle, Lifecycle]:
    """(optimum, curve): the N on a log grid (1e8..1e14 by default) minimising total $ at loss L*, and the curve."""
    L = check_loss_target(target_loss, law)
    N = np.logspace(8, 14, 1201) if n_grid is None else np.asarray(n_grid, dtype=float)
    d_pre = tokens_for_loss(N, L, law)
    with np.errstate(invalid="ignore"):
        curve = lifecycle_costs(N, d_pre, rl_tokens_per_pretrain_token * d_pre,
                                inference_tokens(demand_tokens_per_s, period_s) * np.ones_like(N),
                                usd_per_pretraining_flop, pen, law)
    total = np.where(np.isfinite(curve.usd_total), curve.usd_total, np.inf)
    if not np.any(np.isfinite(total)):
        raise ValueError(f"target_loss: {L} is not reachable by any model up to {N.max():.3g} parameters")
    i = int(np.argmin(total))
    pick = Lifecycle(**{k: np.ravel(v)[i] for k, v in curve.__dict__.items()})
    return pick, curve


def ignoring_inference(curve: Lifecycle) -> Lifecycle:
    """The point of ``curve`` a lab that ignored inference would pick (least pre-training + RL $), priced in full."""
    train = np.where(np.isfinite(curve.usd_pre), curve.usd_pre + curve.usd_rl, np.inf)
    i = int(np.argmin(train))
    return Lifecycle(**{k: np.ravel(v)[i] for k, v in curve.__dict__.items()})


@dataclass(frozen=True)
class Inverse:
    """Pre-training and RL tokens inferred from observed inference volume (lecture L11-L15)."""

    d_inf: float
    d_pre: float
    d_rl: float
    d_chinchilla: float
    overtraining: float
    ratio: tuple  # D_pre : D_RL : D_inf with D_pre = 1


def infer_from_inference(tokens_per_s, period_days, n_active, pen: Penalties = Penalties(), models_per_family=1.0,
                         tokens_per_param=20.0) -> Inverse:
    """Equalised costs 6·D_pre = f·p_RL·D_RL = 2·p_inf·D_inf, with D_inf = rate·period / models_per_family."""
    d_inf = float(inference_tokens(tokens_per_s, period_days * SECONDS_PER_DAY)) / models_per_family
    d_pre = 2 * pen.inference_penalty * d_inf / 6
    d_rl = 6 * d_pre / (pen.rl_flops_factor * pen.rl_penalty)
    d_ch = tokens_per_param * float(n_active)
    return Inverse(d_inf, d_pre, d_rl, d_ch, d_pre / d_ch, (1.0, d_rl / d_pre, d_inf / d_pre))
