"""A session workload's turns by type, from its means: what the analytic cache model (serving/kv_che.py) and the
session steady state (serving/session_state.py) count per turn — input, output, the tokens a turn reuses, the object
it leaves and when that object is next used — and a session's critical path (fork-join: a parent's turn after a
spawn waits for the slowest of its sub-agents). The workloads and their sourced defaults: serving/sessions.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TurnTypes:
    """The workload's turns by type (arrays over types i): per session ``n``, input ``isl``, output ``osl``, own
    reusable tokens ``reuse`` (beyond the system prompt), object after it ``obj``, whether that object is the fork
    of sub-agents spawned after the turn (``spawn``: held through their run) and whether it is never used again by
    its agent (``last``: held T)."""

    n: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    reuse: np.ndarray
    obj: np.ndarray
    spawn: np.ndarray  # bool: the turn spawns sub-agents that fork from its object
    last: np.ndarray
    system_tokens: float
    sub_turns: int  # turns of a sub-agent K_sub (a spawn's run: sub_run_s, K_sub·e2e + sub_thinks·θ)
    fork: np.ndarray = None  # the parent's prefix a sub-agent's turn starts with (0 for a main agent's)
    subagents: int = 0  # sub-agents a spawning turn starts (s)
    sub_thinks: float = 0.0  # E[the slowest of s sub-agents' summed think gaps] / θ (slowest_thinks)
    main_turns: int = 0  # K: the parent's turns

    def sub_run_s(self, e2e_s, theta):
        """D: a spawn's sub-agents' run, from the parent's turn to the last of them finishing (fork-join waits for
        the slowest): K_sub·e2e + E[max_s Σ_{K_sub} Exp(θ)] (the turns' own spread left out)."""
        return self.sub_turns * e2e_s + self.sub_thinks * theta

    def sub_e2e_s(self, run_s, theta):
        """e2e of a sub-agent's turn from its spawn's run D (``sub_run_s`` solved for e2e): (D − sub_thinks·θ)/K_sub,
        0 where the run is shorter than its think gaps."""
        return np.maximum(run_s - self.sub_thinks * theta, 0.0) / max(self.sub_turns, 1)

    def session_s(self, e2e_s, theta):
        """A session's duration, its critical path: K parent turns, each e2e + θ, and each spawn's run D."""
        return self.main_turns * (e2e_s + theta) + float(np.sum(self.spawn)) * self.sub_run_s(e2e_s, theta)

    @property
    def shared_tokens(self) -> float:
        """Mean tokens of a running turn's prompt held by objects the cache keeps anyway: the system prompt (the
        occupancy's S) and a sub-agent's fork (its parent's object, held through the sub-agents' run). vLLM's
        block pool counts a shared block once, so these are not the running requests' own."""
        return self.system_tokens + (0.0 if self.fork is None else self.mean(self.fork))

    @property
    def requests_per_session(self) -> float:
        return float(np.sum(self.n))

    def mean(self, x) -> float:
        return float(np.sum(self.n * x) / np.sum(self.n))


def turn_types(w) -> TurnTypes:
    """The turn types of a MultiTurn or Agentic workload from its means (serving/sessions.py). A sub-agent's turn
    reuses the parent's prefix up to the fork and its own context: both were last used by its previous turn (or,
    for its first, by the parent's), so both segments share that turn's gap."""
    S, a, b, o = float(w.system_prompt_tokens), float(w.first_input_tokens), float(w.new_input_tokens), float(w.output_tokens)
    K = int(w.turns)
    subs = int(getattr(w, "subagents", 0))
    every, Ks = int(getattr(w, "subagent_every", 1)), int(getattr(w, "subagent_turns", 1))
    rows = []  # n, isl, reuse, obj, spawn, last, fork
    ctx = 0.0
    for k in range(K):
        new = a if k == 0 else b
        spawn = subs > 0 and (k + 1) % every == 0 and k + 1 < K
        obj = ctx + new + o
        rows.append((1.0, S + ctx + new, ctx, obj, spawn, k == K - 1, 0.0))
        if spawn:
            sctx = 0.0
            for j in range(Ks):
                sobj = sctx + b + o
                rows.append((float(subs), S + obj + sctx + b, obj + sctx, sobj, False, j == Ks - 1, obj))
                sctx = sobj
        ctx = obj
    r = np.array(rows, float)
    return TurnTypes(r[:, 0], r[:, 1], np.full(len(r), o), r[:, 2], r[:, 3], r[:, 4].astype(bool),
                     r[:, 5].astype(bool), S, Ks, r[:, 6], subs, slowest_thinks(Ks, subs), K)


def slowest_thinks(k: int, s: int) -> float:
    """E[max of s independent sums of k Exp(1) gaps] (Erlang(k)): ∫_0^∞ (1 − F_k(x)^s) dx with
    F_k(x) = 1 − e^{−x}·Σ_{j<k} x^j/j!, by the trapezoid rule on [0, k + 12√k + 40] (the tail beyond is below
    1e-12 of it). s <= 1: k (one sub-agent, the mean). Two sub-agents of 8 turns: 9.57 (mean 8)."""
    if s <= 1:
        return float(k)
    x = np.linspace(0.0, k + 12.0 * np.sqrt(k) + 40.0, 20001)
    term, tail = np.ones_like(x), np.ones_like(x)
    for j in range(1, k):
        term = term * x / j
        tail = tail + term
    F = 1.0 - np.exp(-x) * tail
    y = 1.0 - F ** s
    return float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2.0)
