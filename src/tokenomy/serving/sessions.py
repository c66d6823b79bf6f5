"""Multi-turn and agentic workloads: sessions whose context grows every turn, sub-agents forking from a parent's prefix.

A workload request object (small, frozen; what ``serve(..., workload=...)`` takes) generates a ``SessionPlan``: the
requests of ``sessions`` session trees in the order they are issued, with what each one reuses.

    agent       one growing context: a session's main agent, or a sub-agent. Turn k of an agent sends
                    input_k = I_sys + I_fork + sum_{j<k} (new_j + out_j) + new_k
                I_sys the shared system prompt (one object every session reuses), I_fork the tokens of the parent's
                context the sub-agent forked from (0 for a main agent), new_k the turn's new tokens (the user's message or
                the tool results appended), out_j the outputs the agent generated; the turn generates out_k
    think       the gap between a turn's last token and the agent's next turn (the user reading, the tool running),
                exponential with mean ``think_s`` (tool calls and users: Poisson-like gaps)
    sub-agents  (Agentic) at ``subagent_every``-th parent turns the parent spawns ``subagents`` sub-agents that fork from
                its context after that turn (a snapshot: their own context is not folded back) and run
                ``subagent_turns`` turns each; the parent's next turn waits for all of them (fork-join: a Task tool
                call blocks the turn that made it)
    load        ``concurrency`` U concurrent sessions (a slot starts a new session when its last one ends), or
                ``rate`` sessions per second (Poisson starts); the requests of a session follow each other in time
Lengths per turn are lognormal around their means (sigma 0.5 of ln tokens: heavy-tailed tool outputs), seeded.

Defaults (each stated with where it comes from):
  MultiTurn  chat: 8 turns, 1,000 first-turn tokens then 300 new tokens and 250 output tokens a turn, 30 s think,
             1,000-token system prompt — chosen to match ShareGPT-style chat conversations (mean ~7.5 turns per
             conversation in the vLLM multi-turn benchmark's ShareGPT conversion; outputs of a few hundred tokens);
             an assumption, not a measurement
  Agentic    coding agent: 24 parent turns, 20,000-token system prompt + tools, 2,500 new tokens (tool results)
             and 400 output tokens a turn, 4 s think (tool execution), 2 sub-agents every 8th turn of 8 turns each —
             shaped on InferenceX's agentic runs, which replay Claude Code sessions (session trees with sub-agents
             that run "against a snapshot of the parent cache at spawn", https://inferencex.semianalysis.com/datasets,
             p90 input ~317k tokens over the full corpus); the per-turn figures are chosen to give contexts of
             20k-100k tokens, not fitted to the traces
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIGMA = 0.5  # lognormal spread of per-turn token counts (ln tokens)


@dataclass(frozen=True)
class MultiTurn:
    """Chat sessions: one agent per session (module docstring for the defaults' sources)."""

    turns: int = 8
    first_input_tokens: float = 1000.0
    new_input_tokens: float = 300.0
    output_tokens: float = 250.0
    think_s: float = 30.0
    system_prompt_tokens: float = 1000.0
    kind: str = "multiturn"

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True)
class Agentic:
    """Agent sessions with sub-agents forking from the parent's prefix (module docstring)."""

    turns: int = 24
    first_input_tokens: float = 2500.0
    new_input_tokens: float = 2500.0
    output_tokens: float = 400.0
    think_s: float = 4.0
    system_prompt_tokens: float = 20000.0
    subagents: int = 2
    subagent_every: int = 8
    subagent_turns: int = 8
    kind: str = "agentic"

    def __post_init__(self) -> None:
        _check(self)
        if self.subagents < 0 or self.subagent_every < 1 or self.subagent_turns < 1:
            raise ValueError("subagents: >= 0 sub-agents, spawned every >= 1 turns, each of >= 1 turns")


WORKLOADS = {"multiturn": MultiTurn, "agentic": Agentic}


def _check(w) -> None:
    if not w.think_s >= 0:
        raise ValueError(f"think_s: the think time between turns must be >= 0 s, got {w.think_s!r}")
    if w.turns < 1 or w.turns != int(w.turns):
        raise ValueError(f"turns: a whole number >= 1, got {w.turns!r}")
    for name in ("first_input_tokens", "new_input_tokens", "output_tokens"):
        if not getattr(w, name) >= 1:
            raise ValueError(f"{name}: at least 1 token, got {getattr(w, name)!r}")
    if not w.system_prompt_tokens >= 0:
        raise ValueError(f"system_prompt_tokens: >= 0, got {w.system_prompt_tokens!r}")


def workload_of(kind: str, **overrides):
    """The workload request object for ``kind`` (multiturn | agentic) with the fields given (None: the default)."""
    if kind not in WORKLOADS:
        raise ValueError(f"workload: {kind!r}; allowed: steady, {', '.join(WORKLOADS)}")
    cls = WORKLOADS[kind]
    given = {k: v for k, v in overrides.items() if v is not None}
    bad = [k for k in given if k not in cls.__dataclass_fields__ or k == "kind"]
    if bad:
        raise ValueError(f"{bad[0]}: not a field of the {kind} workload; allowed: "
                         f"{', '.join(f for f in cls.__dataclass_fields__ if f != 'kind')}")
    return cls(**given)


@dataclass(frozen=True)
class SessionPlan:
    """Requests in issue order (arrays over requests r, agents a). A request is released when all of its ``waits``
    predecessors finished (``succ``: whom each one releases), ``gap_s`` after the last of them; a request with no
    predecessor starts at ``start_s`` (NaN: when a session slot frees, closed loop)."""

    agent: np.ndarray  # r -> agent
    turn: np.ndarray  # r -> turn index within its agent
    isl: np.ndarray  # full input tokens
    osl: np.ndarray
    ctx_before: np.ndarray  # r -> tokens of its agent's own object before this turn (reusable if cached)
    gap_s: np.ndarray  # think time before it, after its predecessors finish
    start_s: np.ndarray  # roots: start time (NaN: closed loop slot)
    waits: np.ndarray  # r -> predecessors
    succ: tuple  # r -> tuple of requests it releases
    parent: np.ndarray  # a -> parent agent (-1: a session's main agent)
    fork_tokens: np.ndarray  # a -> tokens of the parent's own object it forked from
    session: np.ndarray  # a -> session index
    system_tokens: float
    last_of_session: np.ndarray  # r -> True for the request whose finish ends its session (closed loop)

    def __len__(self) -> int:
        return len(self.isl)

    def chain(self, r: int) -> list[tuple[int, int]]:
        """[(agent, tokens)] of r's reusable prefix beyond the system prompt, root first: each ancestor's object up
        to its child's fork, then r's own agent's object before this turn."""
        a = int(self.agent[r])
        out = [(a, int(self.ctx_before[r]))]
        while self.parent[a] >= 0:
            out.append((int(self.parent[a]), int(self.fork_tokens[a])))
            a = int(self.parent[a])
        return out[::-1]


class _Builder:
    def __init__(self, system_tokens: float):
        self.I_sys = float(system_tokens)
        self.rows: list[list] = []  # agent, turn, isl, osl, ctx_before, gap
        self.preds: list[list[int]] = []
        self.parent: list[int] = []
        self.fork: list[int] = []
        self.session: list[int] = []

    def agent(self, parent: int, fork: int, session: int) -> int:
        self.parent.append(parent)
        self.fork.append(fork)
        self.session.append(session)
        return len(self.parent) - 1

    def turn(self, a: int, k: int, ctx: int, new: int, out: int, gap: float, preds: list[int]) -> int:
        base = self.I_sys + (self.fork[a] + _ancestor_tokens(self, a) if self.parent[a] >= 0 else 0)
        self.rows.append([a, k, base + ctx + new, out, ctx, gap])
        self.preds.append(preds)
        return len(self.rows) - 1


def _ancestor_tokens(b: _Builder, a: int) -> int:
    """Tokens of the forks above a's parent (a sub-agent of a sub-agent sees its grandparent's prefix too)."""
    p, tot = b.parent[a], 0
    while b.parent[p] >= 0:
        tot += b.fork[p]
        p = b.parent[p]
    return tot


def _draw(rng, mean: float, n: int) -> np.ndarray:
    """Lognormal token counts with the given mean (sigma SIGMA), at least 1."""
    mu = np.log(mean) - SIGMA ** 2 / 2.0
    return np.maximum(np.rint(rng.lognormal(mu, SIGMA, n)), 1).astype(np.int64)


def _agent_turns(b: _Builder, rng, w, a: int, n: int, first: float, preds0: list[int], session: int) -> list[int]:
    """n turns of agent a (sub-agents spawned after every subagent_every-th turn of a main agent); returns them."""
    new = _draw(rng, first, 1).tolist() + _draw(rng, w.new_input_tokens, n - 1).tolist()
    out = _draw(rng, w.output_tokens, n).tolist()
    gaps = rng.exponential(w.think_s, n) if w.think_s > 0 else np.zeros(n)
    ctx, preds, made = 0, preds0, []
    for k in range(n):
        r = b.turn(a, k, ctx, new[k], out[k], float(gaps[k]) if preds else 0.0, preds)
        made.append(r)
        ctx += new[k] + out[k]
        preds = [r]
        spawn = getattr(w, "subagents", 0) and b.parent[a] < 0 and (k + 1) % w.subagent_every == 0 and k + 1 < n
        if spawn:
            ends = []
            for _ in range(w.subagents):
                c = b.agent(a, ctx, session)
                ends.append(_agent_turns(b, rng, w, c, w.subagent_turns, w.new_input_tokens, [r], session)[-1])
            preds = ends  # fork-join: the parent's next turn waits for every sub-agent
    return made


def generate(w, sessions: int, seed: int = 0, start_s=None) -> SessionPlan:
    """``sessions`` session trees of workload ``w`` (MultiTurn | Agentic), seeded; ``start_s``: the sessions' start
    times (None: closed loop, started as slots free)."""
    if sessions < 1:
        raise ValueError(f"requests: at least one session, got {sessions!r}")
    rng = np.random.default_rng(seed)
    b = _Builder(w.system_prompt_tokens)
    roots, lasts = [], []
    for s in range(int(sessions)):
        a = b.agent(-1, 0, s)
        made = _agent_turns(b, rng, w, a, int(w.turns), w.first_input_tokens, [], s)
        roots.append(made[0])
        lasts.append(made[-1])
    rows = np.array(b.rows, float)
    start = np.full(len(rows), np.nan)
    if start_s is not None:
        start[roots] = np.asarray(start_s, float)[: len(roots)]
    last = np.zeros(len(rows), bool)
    last[lasts] = True
    return _plan(b, rows, start, last)


def _plan(b: _Builder, rows: np.ndarray, start: np.ndarray, last: np.ndarray) -> SessionPlan:
    succ: list[list[int]] = [[] for _ in range(len(rows))]
    for r, ps in enumerate(b.preds):
        for p in ps:
            succ[p].append(r)
    return SessionPlan(rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64), rows[:, 2].astype(np.int64),
                       rows[:, 3].astype(np.int64), rows[:, 4].astype(np.int64), rows[:, 5], start,
                       np.array([len(p) for p in b.preds], np.int64), tuple(tuple(s) for s in succ),
                       np.array(b.parent, np.int64), np.array(b.fork, np.int64), np.array(b.session, np.int64),
                       float(b.I_sys), last)


def session_start_times(rate: float, sessions: int, seed: int = 0) -> np.ndarray:
    """Poisson session starts at ``rate`` sessions/s (open loop)."""
    rng = np.random.default_rng(seed + 1)
    return np.cumsum(rng.exponential(1.0 / rate, sessions))
