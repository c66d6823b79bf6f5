"""Speculative decoding, multi-token prediction and "fast mode" (lecture §2.14, which names but never analyses them).

A draft (a small model, or an MTP head) proposes k tokens; the target verifies them in one pass of k+1 tokens.
With an i.i.d. per-token acceptance rate α (Leviathan et al. 2023, arXiv 2211.17192, eq. 1):
    E[tokens per step] = (1 − α^(k+1)) / (1 − α)          (k+1 when α = 1)
Time per round = t_verify(k+1 tokens) + k·d·t_step(1), d = draft step / target step.
    memory-bound target: t_verify ≈ t_step  ⇒ speed-up ≈ E/(1 + k·d), cost per token × (1 + k·d)/E  (cheaper)
    compute-bound target: t_verify ≈ (k+1)·t_step ⇒ speed-up ≈ E/(k+1 + k·d) < 1: speculation wastes compute
The engine evaluates t_verify as a pass with len_pass = k+1 on the deployment's layout (attention and KV writes
included; MLA attention in the cheaper of its absorbed and plain forms, so k+1 tokens cost ~(k+1)x one token's
attention when attention binds).
Fast mode: a smaller batch (lower step time) plus speculation, priced against the normal operating point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.econ.cost import Serving, first_crossing

# Dwarkesh's motivating numbers for a provider's "fast mode" (lecture §2.14): 6× the price for 2.5× the speed.
FAST_MODE_PRICE, FAST_MODE_SPEED = 6.0, 2.5


def expected_tokens_per_step(alpha, k):
    """(1 − α^(k+1))/(1 − α): tokens emitted per verification step (accepted drafts + the bonus token)."""
    a, kk = np.asarray(alpha, float), np.asarray(k, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = (1.0 - a ** (kk + 1.0)) / (1.0 - a)
    return np.where(a >= 1.0, kk + 1.0, e)


def speedup_memory_bound(alpha, k, draft_cost=0.0):
    """E/(1 + k·d): the verify pass costs one ordinary step because weights and KV are read once."""
    return expected_tokens_per_step(alpha, k) / (1.0 + np.asarray(k, float) * np.asarray(draft_cost, float))


def speedup_compute_bound(alpha, k, draft_cost=0.0):
    """E/(k+1 + k·d): every verified position costs compute, accepted or not."""
    kk = np.asarray(k, float)
    return expected_tokens_per_step(alpha, k) / (kk + 1.0 + kk * np.asarray(draft_cost, float))


def check_speculation(k: int, alpha: float, draft_cost: float) -> None:
    if int(k) != k or k < 1:
        raise ValueError(f"draft_tokens: must be a positive integer, got {k}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"acceptance: must be in [0, 1], got {alpha}")
    if not 0.0 <= draft_cost < 1.0:
        raise ValueError(f"draft_cost: must be in [0, 1) (draft step / target step), got {draft_cost}")


@dataclass(frozen=True)
class Speculation:
    """Per batch (arrays): the plain decode step, the speculative round, and their ratios."""

    batch: object
    base_step_s: object
    verify_step_s: object
    round_s: object  # verify + k draft steps
    tokens_per_step: float
    speedup: object  # tokens/s per user, speculative / plain
    cost_ratio: object  # $ per token, speculative / plain (same batch, same chips)
    base_usd_per_mtok: object
    usd_per_mtok: object
    base_bound: object
    fits: object


def speculate(sv: Serving, batch, context, k: int, alpha: float, draft_cost: float) -> Speculation:
    """Engine evaluation of speculative decoding at each batch (draft steps priced at d × the plain step)."""
    check_speculation(k, alpha, draft_cost)
    B = np.asarray(batch, float)
    base = sv.terms(B, float(context))
    ver = sv.terms(B, float(context), float(k + 1))
    e = float(expected_tokens_per_step(alpha, k))
    round_s = ver.step_s + k * draft_cost * base.step_s
    speed = e * base.step_s / round_s
    fits = np.asarray(base.fits) & np.asarray(ver.fits)
    return Speculation(batch=B, base_step_s=base.step_s, verify_step_s=ver.step_s, round_s=round_s,
                       tokens_per_step=e, speedup=speed, cost_ratio=1.0 / speed,
                       base_usd_per_mtok=base.usd_per_mtok, usd_per_mtok=base.usd_per_mtok / speed,
                       base_bound=base.bound, fits=fits)


def fast_mode_rows(sv: Serving, base_batch: float, batches, context, k: int, alpha: float,
                   draft_cost: float) -> list[dict]:
    """Speed and price multipliers of serving at a smaller batch, against plain decode at ``base_batch``:
    by batch alone, and with speculation. speed = tokens/s per user ratio; price = $ per token ratio."""
    ref = sv.terms(float(base_batch), float(context))
    sp = speculate(sv, batches, context, k, alpha, draft_cost)
    ref_step, ref_cost = float(np.ravel(ref.step_s)[0]), float(np.ravel(ref.usd_per_mtok)[0])
    rows = []
    for i, b in enumerate(np.ravel(sp.batch)):
        ok = bool(np.ravel(sp.fits)[i])
        plain_speed = ref_step / float(np.ravel(sp.base_step_s)[i])
        v = (lambda x: x if ok else None)  # noqa: E731
        rows.append({"batch": int(b), "speed_multiplier_batch_only": v(plain_speed),
                     "price_multiplier_batch_only": v(float(np.ravel(sp.base_usd_per_mtok)[i]) / ref_cost),
                     "speed_multiplier": v(plain_speed * float(np.ravel(sp.speedup)[i])),
                     "price_multiplier": v(float(np.ravel(sp.usd_per_mtok)[i]) / ref_cost), "fits": ok})
    return rows


def fast_mode_point(sv: Serving, base_batch: float, context, target_speed: float = FAST_MODE_SPEED,
                    k: int = 0, alpha: float = 0.0, draft_cost: float = 0.0, speculative_base: bool = False):
    """The largest batch (cheapest way) whose tokens/s per user is ``target_speed`` × that of ``base_batch``, and its
    price multiplier: (batch, price multiplier), or (None, None) when no batch is fast enough.
    k = 0: batch alone. speculative_base: the normal mode speculates too (same k, alpha, d)."""
    def per_token(b):
        if k == 0:
            t = sv.terms(b, float(context))
            return t.step_s, t.usd_per_mtok
        sp = speculate(sv, b, context, k, alpha, draft_cost)
        return sp.round_s / sp.tokens_per_step, sp.usd_per_mtok
    if speculative_base and k:
        ref_lat, ref_cost = (float(np.ravel(x)[0]) for x in per_token(np.array([float(base_batch)])))
    else:
        t = sv.terms(float(base_batch), float(context))
        ref_lat, ref_cost = float(np.ravel(t.step_s)[0]), float(np.ravel(t.usd_per_mtok)[0])
    # speed(b) = ref_lat / latency(b) falls with b: find where it drops below the target.
    b = first_crossing(lambda x: target_speed - ref_lat / per_token(x)[0], 1.0, float(base_batch))
    if b is not None and b <= 1.0 and ref_lat / float(np.ravel(per_token(np.array([1.0]))[0])[0]) < target_speed:
        return None, None  # even one sequence per step is not fast enough
    b = float(base_batch) if b is None else b
    return b, float(np.ravel(per_token(np.array([b]))[1])[0]) / ref_cost
