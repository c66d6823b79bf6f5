"""The occupancy of session traffic's objects in an LRU that holds each for T after its last use, and its slope
and curvature in T, at fixed loads over many points: serving/kv_che.py's held_i(T) and held_fork(T) summed over
the turn types (module docstring there), what Newton's steps for T (kv_che.characteristic_time) evaluate."""

from __future__ import annotations

import numpy as np

from tokenomy.serving.turn_types import TurnTypes


class Occupancy:
    """occupancy_and_slope at fixed (λ, θ, t_run, W) over points, for many T (Newton's steps), λ folded in. O_reuse:
    the objects reused after Exp(θ) (forks included), O_last: the last turns', O_fork: the forks'. The reused
    objects hold λ·O_reuse·(min(W, T) + θ·(1 − e^{−(T−W)⁺/θ})) (θ = 0: the wait alone): one product a step."""

    def __init__(self, tt: TurnTypes, lam, th, t_run, W=0.0):
        nO = tt.n * tt.obj
        self.O_reuse, self.O_last = float(np.sum(nO[~tt.last])), float(np.sum(nO[tt.last]))
        O_fork, s = float(np.sum(nO[tt.spawn & ~tt.last])), max(int(tt.subagents), 1)
        self.lam, self.I_sys = lam, tt.system_tokens
        self.W = np.broadcast_to(np.asarray(W, float), np.shape(lam))
        self.waits = bool(np.any(self.W > 0))  # reused objects held unreferenced from their lookup to admission
        self.pos = th > 0
        self.all_pos = bool(np.all(self.pos))  # the common case: every θ > 0 (no mask to apply)
        th0 = th if self.all_pos else np.where(self.pos, th, 0.0)
        self.inv_th = 1.0 / (th if self.all_pos else np.where(self.pos, th, 1.0))
        self.neg_inv_th = -self.inv_th
        self.l_reuse, self.l_last = lam * self.O_reuse, lam * self.O_last
        self.a_theta = self.l_reuse * th0  # λ·O_reuse·θ: the reused objects' hold without waits
        self.reach2 = np.square(th0 / (2.0 * s))  # (θ/2s)²: the longest step that settles unlooked (_solve_t)
        self.inv_l_last = 1.0 / np.maximum(self.l_last, 1e-300)
        self.forks = O_fork > 0
        if self.forks:  # held_fork = t_run·(1 − q·e^{−sT/θ'}): O_fork·t_run, O_fork·t_run·q and the rate s/θ' per point
            with np.errstate(divide="ignore", invalid="ignore"):
                e2e = tt.sub_e2e_s(t_run, th)
                idle = th + W  # a sub-agent's fork unreferenced: its think gap and its turn's wait for admission
                pinned = np.maximum(e2e - W, 0.0)
                q = np.where((idle > 0) & (t_run > 0), idle / np.where(idle > 0, idle + pinned, 1.0), 0.0)
                # t_run = inf: no root
                self.fd, self.fq = lam * O_fork * t_run, lam * O_fork * t_run * q ** s
                self.neg_k = np.broadcast_to(-s / np.where(idle > 0, idle, 1.0), np.shape(lam))  # −s/θ'

    def at_zero(self):
        """occupancy(0) per point: λ·O_fork·t_run·(1 − q) + I_sys (the forks held while their sub-agents run)."""
        return (self.fd - self.fq if self.forks else 0.0) + self.I_sys + 0.0 * self.lam

    def __call__(self, T, curvature=False):
        """(occupancy, slope) at T (an array of the points' shape), with ``curvature`` a bound on |d² occupancy / dT²|:
        λ·O_reuse·e^{−(T−W)⁺/θ}/θ + (s/θ')·(a fork's slope term), exact where T >= W and, below W (where the
        reused objects' term is linear), their term's value at W (kv_che._solve_t settles a step on it). In place on
        fresh arrays."""
        # the reused objects: λ·O_reuse·E[min(τ + W, T)] = λ·O_reuse·(min(W, T) + θ·(1 − e^{−(T−W)⁺/θ})), slope
        # λ·O_reuse·e^{−(T−W)⁺/θ} (1 below W), curvature the slope/θ above W
        after = np.subtract(T, self.W) if self.waits else T
        with np.errstate(over="ignore", invalid="ignore"):
            surv = np.multiply(np.maximum(after, 0.0) if self.waits else after, self.neg_inv_th)
            np.exp(surv, out=surv)  # P(Exp(θ) > (T − W)⁺)
        if not self.all_pos:
            surv = np.where(self.pos, surv, 0.0)
        total = np.subtract(1.0, surv)
        total *= self.a_theta
        if self.waits:
            total += self.l_reuse * np.minimum(self.W, T)
            if not self.all_pos:  # θ = 0: held the wait alone, slope 1 below it
                surv = np.where(self.pos | (after >= 0), surv, 1.0)
        slope = surv
        slope *= self.l_reuse
        if curvature:
            curv = slope * self.inv_th
        total += np.multiply(self.l_last, T)
        slope += self.l_last
        if self.forks:
            with np.errstate(over="ignore", invalid="ignore"):
                e = np.multiply(self.neg_k, T)
                np.exp(e, out=e)
                e *= self.fq  # λ·O_fork·t_run·q·e^{−sT/θ'} (0 where θ = 0: q = 0)
                total += self.fd
                total -= e
                e *= self.neg_k
                slope -= e  # + (s/θ')·(the term)
                if curvature:
                    e *= self.neg_k
                    curv += e
        if self.I_sys:
            total += self.I_sys
        return (total, slope, curv) if curvature else (total, slope)

    def take(self, keep) -> "Occupancy":
        """The points ``keep`` (a mask or indices over the points), the fields ``__call__`` reads."""
        out = object.__new__(Occupancy)
        out.O_last, out.I_sys, out.forks = self.O_last, self.I_sys, self.forks
        out.all_pos, out.waits, out.pos = self.all_pos, self.waits, None if self.all_pos else self.pos[keep]
        keep = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else keep  # (indices: one pass a field)
        for name in ("inv_th", "neg_inv_th", "l_reuse", "l_last", "reach2") + \
                ("a_theta",) + (("W",) if self.waits else ()) + (("fd", "fq", "neg_k") if self.forks else ()):
            setattr(out, name, getattr(self, name)[keep])
        return out
