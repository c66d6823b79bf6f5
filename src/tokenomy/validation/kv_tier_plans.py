"""A published tiered-KV case's traffic (catalog/validation/kv_tiering, schema.KvTierWorkload) as the session
simulator's plans (serving/sessions.SessionPlan), one per replica, and which requests the published figure averages.

    single         r0 computes a prompt of L tokens; the measured request re-sends it. For a DRAM hit, r1 (another
                   L-token prompt, on an HBM pool of one prompt) first pushes r0's object out of HBM while the
                   write-through DRAM tier keeps it: the source's 'evict to the CPU tier, then re-request'. A miss
                   is r0 itself.
    shared-prefix  G prefixes of P tokens, each request P + U tokens (U: a per-request tail, or a per-user question
                   when prompts_per_group users each repeat theirs). The first request of a group on a replica is its
                   group's agent there (its object, once finished, holds the prefix); later requests of the group fork
                   from it at P, a repeated question also reuses its own object. Closed loop (``concurrency``): one
                   request per session in draw order; open loop: Poisson warm-up, then (drained: DRAIN_S) the stage; prompts drawn
                   uniformly, seeded. The stages between the warm-up and the case's stage are not replayed.
    agentic-trace  the recorded corpus is not shipped: kv-cache-tester's replay (CLAUDE_CODE_REPLAY: its traces'
                   statistics as the replay sends them) or, for another corpus, serving/sessions.Agentic's defaults;
                   ``users`` closed-loop sessions (``concurrency`` unless the tester's ramp settles lower:
                   validation/kv_tiering), twice as many as slots (recycled, --recycle), over the run's duration; the
                   figure averages the requests that arrive within it. The tester's "TTFT" of a non-streaming request
                   (type "n" in the traces) is its whole response time (trace_replay_tester.py: first_token_time is
                   set when the complete response returns): ``streamed`` marks which requests stream.
Routing over replicas (llm-d's schedulers): random (uniform), load (round-robin: a balanced load with no affinity),
prefix-precise and prefix-approximate (a group's requests to one replica, groups spread evenly).
Policy "recompute" (no prefix cache): nothing is reusable (no context before a turn, no forks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.serving.routing import assign
from tokenomy.serving.sessions import Agentic, SessionPlan, generate

SEED = 0
GAP_S = 1.0  # single: the pause before the re-request (the source sends them one at a time)
# inference-perf runs a stage until every request it sent has finished (loadgen/load_generator.py run_stage: `while
# finished_requests_counter.value < num_requests`, commit 5b1da4d of 2025-09-18) and sleeps its interval before the
# next: a stage starts on a drained server. The stage here starts this long after the warm-up's last request, time
# for any backlog to drain (an idle server evicts nothing, so the cache is what the warm-up left).
DRAIN_S = 3600.0


@dataclass(frozen=True)
class Replay:
    """One replica's plan, its closed-loop slots (None: open loop) and which of its requests are measured."""

    plan: SessionPlan
    concurrency: int | None
    measured: np.ndarray  # bool per request
    hbm_tokens: float | None = None  # an HBM pool the case imposes (single's eviction step)
    streamed: np.ndarray | None = None  # bool per request: its TTFT is its first token (else its whole response)


def _rows_plan(agent, isl, osl, ctx, start, waits_on, parent, fork) -> SessionPlan:
    """A SessionPlan from per-request rows (one session per agent's last request; ``waits_on``: the request each
    one follows, -1 for none)."""
    n = len(isl)
    succ = [[] for _ in range(n)]
    for r, p in enumerate(waits_on):
        if p >= 0:
            succ[p].append(r)
    last = np.zeros(n, bool)
    last[list({a: r for r, a in enumerate(agent)}.values())] = True  # each agent's last request, in one pass
    return SessionPlan(np.array(agent, np.int64), np.zeros(n, np.int64), np.array(isl, np.int64),
                       np.array(osl, np.int64), np.array(ctx, np.int64),
                       np.array([GAP_S if p >= 0 else 0.0 for p in waits_on]), np.array(start, float),
                       np.array([int(p >= 0) for p in waits_on], np.int64), tuple(tuple(s) for s in succ),
                       np.array(parent, np.int64), np.array(fork, np.int64), np.arange(len(parent), dtype=np.int64),
                       0.0, last)


def single(w, hit_tier: str) -> Replay:
    L, out = int(w.prefix_tokens), int(w.output_tokens or 1)
    if hit_tier == "none":
        return Replay(_rows_plan([0], [L], [out], [0], [0.0], [-1], [-1], [0]), None, np.array([True]))
    if hit_tier == "hbm":
        plan = _rows_plan([0, 0], [L, L], [out, out], [0, L], [0.0, np.nan], [-1, 0], [-1], [0])
        return Replay(plan, None, np.array([False, True]))
    # a lower tier: a second prompt of the same length evicts the first from an HBM pool of one prompt
    plan = _rows_plan([0, 1, 0], [L, L, L], [out] * 3, [0, 0, L], [0.0, np.nan, np.nan], [-1, 0, 1], [-1, -1],
                      [0, 0])
    return Replay(plan, None, np.array([False, False, True]), hbm_tokens=float(L + out))


def _draws(w, rng) -> tuple[np.ndarray, np.ndarray]:
    """(prompt drawn, arrival s) per request: closed loop in draw order (each prompt once, shuffled, where the
    source's tool sends its set once), open loop Poisson warm-up then the stage."""
    prompts = int(w.groups) * int(w.prompts_per_group or 1)
    if w.request_rate is None and w.each_prompt_once:  # SGLang bench_serving's generated-shared-prefix set: every
        return rng.permutation(prompts), np.full(prompts, np.nan)  # prompt once, shuffled (unless --disable-shuffle)
    if w.request_rate is None:
        n = int(w.requests or 4 * prompts)
        return rng.integers(0, prompts, n), np.full(n, np.nan)
    warm = int(w.warmup_requests)
    t_warm = np.cumsum(rng.exponential(1.0 / float(w.warmup_rate or w.request_rate), warm))
    n = max(int(round(float(w.request_rate) * float(w.duration_s))), 1)
    t0 = float(t_warm[-1]) + DRAIN_S if warm else 0.0
    t = t0 + np.cumsum(rng.exponential(1.0 / float(w.request_rate), n))
    # the warm-up seats every prompt once in order (llm-d: 'seat residents ~1 x S'), the stage draws them
    first = np.arange(warm) % prompts
    return np.concatenate([first, rng.integers(0, prompts, n)]), np.concatenate([t_warm, t])


# llm-d's schedulers as serving/routing's key routers over the prefix groups
LLMD_ROUTER = {"random": "random", "load": "round-robin", "prefix-precise": "group-sticky",
               "prefix-approximate": "group-sticky"}


def shared_prefix(w, routing: str, replicas: int, reuse: bool) -> list[Replay]:
    rng = np.random.default_rng(SEED)
    prompt, arrival = _draws(w, rng)
    per_group = int(w.prompts_per_group or 1)
    repeats = w.prompts_per_group is not None  # each prompt a user's fixed question, repeated
    group = prompt // per_group
    where = assign(LLMD_ROUTER.get(routing, "group-sticky"), replicas, group, rng)  # "single": one replica
    timed = np.arange(len(prompt)) >= int(w.warmup_requests if w.request_rate is not None else 0)
    P, U, out = int(w.prefix_tokens), int(w.unique_tokens), int(w.output_tokens or 1)
    replays = []
    for k in range(replicas):
        idx = np.flatnonzero(where == k)
        if len(idx) == 0:
            continue
        agent, ctx, parent, fork, root, own = [], [], [], [], {}, {}
        for r in idx:
            g, p = int(group[r]), int(prompt[r])
            key = p if repeats else ("req", int(r))
            if key in own:  # a repeated question: its own object again
                a = own[key]
                agent.append(a)
                ctx.append((P + U if parent[a] < 0 else U) if reuse else 0)
                continue
            a = len(parent)
            own[key] = a
            if g in root and reuse:
                parent.append(root[g])
                fork.append(P)
            else:
                parent.append(-1)
                fork.append(0)
                root.setdefault(g, a)
            agent.append(a)
            ctx.append(0)
        n = len(idx)
        plan = _rows_plan(agent, [P + U] * n, [out] * n, ctx, arrival[idx], [-1] * n, parent, fork)
        if w.concurrency is not None:  # closed loop: every request its own session, in draw order
            plan = replace(plan, session=np.arange(len(parent), dtype=np.int64), last_of_session=np.ones(n, bool))
        replays.append(Replay(plan, w.concurrency, timed[idx]))
    return replays


# kv-cache-tester's Claude Code traces (github.com/callanjfox/kv-cache-tester traces/, v8 set of 2026-04-14, commit
# c9b3da5: 739 traces; 710 read, the 29 largest files absent from the stored copy) as trace_replay_tester sends them
# under --max-context 100000 --warm-prefix-pct 0.5: a trace's requests up to its first one over 100k tokens (523
# traces keep at least one): 33.5 requests a session, the first 32,026 tokens on average of which the canonical warm
# prefix, 0.5 x the largest tool + system tokens (23,081) = 11,540, is shared by every user; then 1,209 new tokens
# and 416 output tokens a request (means), think time min(think_time, --max-delay 600 s) 52.9 s mean (--timing-
# strategy think-only); 81.4% of the requests non-streaming (14,273 "n" / 3,268 "s"); 63 sub-agent entries in 48,721:
# none modelled. Computed from the trace files, not fitted to any result.
CLAUDE_CODE_REPLAY = Agentic(turns=34, first_input_tokens=32026.0 - 11540.0, new_input_tokens=1209.0,
                             output_tokens=416.0, think_s=52.9, system_prompt_tokens=11540.0, subagents=0)
NON_STREAMING_SHARE = 14273 / (14273 + 3268)


def agentic(w, reuse: bool, users: int | None = None) -> Replay:
    U = int(users or w.concurrency)
    tester = w.trace.startswith("kv-cache-tester")
    plan = generate(CLAUDE_CODE_REPLAY if tester else Agentic(), sessions=2 * U, seed=SEED)
    if not reuse:
        plan = replace(plan, ctx_before=np.zeros_like(plan.ctx_before), fork_tokens=np.zeros_like(plan.fork_tokens),
                       system_tokens=0.0)
    streamed = np.random.default_rng(SEED).random(len(plan.isl)) >= NON_STREAMING_SHARE if tester else None
    return Replay(plan, U, np.ones(len(plan.isl), bool), streamed=streamed)


def replays(case, users: int | None = None) -> list[Replay]:
    """The case's plans, one per replica that receives requests (``users``: an agentic replay's sessions)."""
    w, reuse = case.workload, case.policy != "recompute"
    if w.kind == "single":
        return [single(w, case.hit_tier)]
    if w.kind == "shared-prefix":
        return shared_prefix(w, case.routing, case.replicas, reuse)
    return [agentic(w, reuse, users)]
