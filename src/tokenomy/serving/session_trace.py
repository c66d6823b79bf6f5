"""Session traces: recorded multi-turn and agentic traffic as a SessionPlan, replayed at its own timestamps.

Three formats, told apart by the file (a user's file, not the catalog):

  tokenomy CSV (header row required) or JSONL, one request a row:
      session_id, parent_id, timestamp_s, new_input_tokens, output_tokens[, fork_tokens]
    a session's rows in time order are its turns, each appending new_input_tokens to the session's context
    (its earlier inputs and outputs); parent_id ("" or absent: none) names the session a sub-agent forks from, at
    fork_tokens of the parent's context (default: all of it at the child's first row); the parent must appear on an
    earlier row. timestamp_s: seconds, the request's arrival.
  AIPerf mooncake_trace with sessions (https://docs.nvidia.com/aiperf/, "Trace Replay with Mooncake Traces"): JSONL
      {"session_id", "input_length", "output_length", "timestamp" (ms) | "delay" (ms)}
    AIPerf accumulates a session's history, so input_length is the turn's new tokens; a turn with ``delay`` is sent
    that long after the previous turn of its session completes (replayed so: released by it)
  Mooncake (FAST'25 traces, https://github.com/kvcache-ai/Mooncake, FAST25-release): JSONL
      {"timestamp" (ms), "input_length", "output_length", "hash_ids"}
    hash_ids name the prompt's blocks of ``block_tokens`` (512 in Mooncake's traces); a request reuses the longest run
    of leading blocks an earlier request sent: it forks from that request's prefix (no system prompt apart)
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from tokenomy.serving.sessions import SessionPlan, _Builder, _plan

MOONCAKE_BLOCK_TOKENS = 512  # Mooncake's FAST'25 traces hash 512-token blocks (its README, "Open Source Trace")


def read_session_trace(path, block_tokens: int = MOONCAKE_BLOCK_TOKENS) -> SessionPlan:
    """A session trace file (module docstring) as a SessionPlan; a bad row names its line and field."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"trace: {str(path)!r} is not a file")
    text = p.read_text()
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if not first.lstrip().startswith("{"):
        return _tokenomy_rows(p.name, _csv_rows(p.name, text))
    recs = _jsonl(p.name, text)
    keys = set(recs[0][1])
    if "new_input_tokens" in keys:
        return _tokenomy_rows(p.name, recs)
    if "session_id" in keys:
        return _aiperf(p.name, recs)
    return _mooncake(p.name, recs, block_tokens)


def _jsonl(name: str, text: str) -> list[tuple[int, dict]]:
    out = []
    for n, ln in enumerate(text.splitlines(), 1):
        if not ln.strip():
            continue
        try:
            rec = json.loads(ln)
        except json.JSONDecodeError:
            raise ValueError(f"trace: {name} line {n}: not JSON") from None
        if not isinstance(rec, dict):
            raise ValueError(f"trace: {name} line {n}: want a JSON object")
        out.append((n, rec))
    if not out:
        raise ValueError(f"trace: {name} has no requests")
    return out


def _csv_rows(name: str, text: str) -> list[tuple[int, dict]]:
    rows = list(csv.reader(text.splitlines()))
    head = [h.strip() for h in rows[0]] if rows else []
    need = ("session_id", "timestamp_s", "new_input_tokens", "output_tokens")
    if not all(k in head for k in need):
        raise ValueError(f"trace: {name} line 1: a header naming {', '.join(need)} (and parent_id, fork_tokens)")
    return [(n, dict(zip(head, (c.strip() for c in rec)))) for n, rec in enumerate(rows[1:], 2) if any(rec)]


def _num(name: str, n: int, rec: dict, key: str, lo: float, whole: bool = True, default=None) -> float:
    v = rec.get(key, default)
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = math.nan
    if not (x >= lo and math.isfinite(x)) or (whole and x != int(x)):
        raise ValueError(f"trace: {name} line {n}: {key} {v!r}; want {'a whole number' if whole else 'a number'} "
                         f">= {lo:g}")
    return x


def _tokenomy_rows(name: str, recs: list[tuple[int, dict]]) -> SessionPlan:
    b, agents, ctx, arrival, turns = _Builder(0.0), {}, {}, [], {}
    for n, rec in sorted(recs, key=lambda x: _num(name, x[0], x[1], "timestamp_s", 0.0, whole=False)):
        sid, par = str(rec.get("session_id", "")), str(rec.get("parent_id") or "")
        t = _num(name, n, rec, "timestamp_s", 0.0, whole=False)
        new, out = _num(name, n, rec, "new_input_tokens", 1), _num(name, n, rec, "output_tokens", 1)
        if not sid:
            raise ValueError(f"trace: {name} line {n}: session_id is empty")
        if sid not in agents:
            if par and par not in agents:
                raise ValueError(f"trace: {name} line {n}: parent_id {par!r} names no earlier session")
            pa = agents[par] if par else -1
            fork = ctx[pa] if par else 0
            if par and rec.get("fork_tokens") not in (None, ""):
                fork = min(int(_num(name, n, rec, "fork_tokens", 0)), ctx[pa])
            agents[sid] = b.agent(pa, fork, len(agents) if pa < 0 else b.session[pa])
            ctx[agents[sid]], turns[agents[sid]] = 0, 0
        a = agents[sid]
        b.turn(a, turns[a], ctx[a], int(new), int(out), 0.0, [])
        ctx[a] += int(new + out)
        turns[a] += 1
        arrival.append(t)
    return _replay(b, arrival)


def _aiperf(name: str, recs: list[tuple[int, dict]]) -> SessionPlan:
    b, agents, ctx, last, start = _Builder(0.0), {}, {}, {}, []
    for n, rec in recs:
        sid = str(rec.get("session_id", ""))
        new, out = _num(name, n, rec, "input_length", 1), _num(name, n, rec, "output_length", 1)
        if sid not in agents:
            agents[sid] = b.agent(-1, 0, len(agents))
            ctx[agents[sid]] = 0
        a = agents[sid]
        if "delay" in rec and a in last:
            gap = _num(name, n, rec, "delay", 0.0, whole=False) / 1e3
            r = b.turn(a, b.rows[last[a]][1] + 1, ctx[a], int(new), int(out), gap, [last[a]])
            start.append(math.nan)
        else:
            t = _num(name, n, rec, "timestamp", 0.0, whole=False) / 1e3
            r = b.turn(a, b.rows[last[a]][1] + 1 if a in last else 0, ctx[a], int(new), int(out), 0.0, [])
            start.append(t)
        ctx[a] += int(new + out)
        last[a] = r
    return _replay(b, start)


def _mooncake(name: str, recs: list[tuple[int, dict]], block_tokens: int) -> SessionPlan:
    """Each request its own one-turn agent forking from the earlier request sharing its longest run of leading
    hash_ids (the prefix it can reuse), at that many blocks' tokens."""
    b, seen, base, start = _Builder(0.0), {}, [], []
    for n, rec in sorted(recs, key=lambda x: _num(name, x[0], x[1], "timestamp", 0.0, whole=False)):
        isl, out = _num(name, n, rec, "input_length", 1), _num(name, n, rec, "output_length", 1)
        ids = rec.get("hash_ids") or []
        if not isinstance(ids, list):
            raise ValueError(f"trace: {name} line {n}: hash_ids must be a list")
        key, shared, src = 0, 0, -1
        keys = []
        for k, h in enumerate(ids):
            key = hash((key, h))
            keys.append(key)
            if key in seen and shared == k:
                shared, src = k + 1, seen[key]
        shared_tok = min(shared * block_tokens, int(isl) - 1)
        parent, fork = _fork_point(b, base, src, shared_tok)
        a = b.agent(parent, fork, len(b.parent) if parent < 0 else b.session[parent])
        own_base = (base[parent] + fork) if parent >= 0 else 0
        base.append(own_base)
        b.turn(a, 0, 0, int(isl) - own_base, int(out), 0.0, [])
        b.rows[-1][2] = isl  # the recorded input, whatever the forks sum to
        for key in keys:
            seen[key] = a
        start.append(_num(name, n, rec, "timestamp", 0.0, whole=False) / 1e3)
    return _replay(b, start)


def _fork_point(b: _Builder, base: list[int], src: int, shared: int) -> tuple[int, int]:
    """(parent agent, tokens of its own object) for a prefix of ``shared`` tokens found in agent ``src``: the
    ancestor whose own object holds the prefix's last token."""
    a = src
    while a >= 0 and shared <= base[a]:
        a = b.parent[a]
    if a < 0 or shared <= 0:
        return -1, 0
    return a, shared - base[a]


def _replay(b: _Builder, start: list[float]) -> SessionPlan:
    rows = np.array(b.rows, float)
    last = np.zeros(len(rows), bool)
    return _plan(b, rows, np.array(start, float), last)


def write_session_trace(plan: SessionPlan, arrival_s, path) -> None:
    """A plan with its arrivals as tokenomy JSONL (the first format above): what a simulated run replays."""
    ids = [f"s{a}" for a in range(len(plan.parent))]
    with Path(path).open("w") as f:
        for r in np.argsort(np.asarray(arrival_s, float), kind="stable"):
            a = int(plan.agent[r])
            new = int(plan.isl[r]) - int(plan.ctx_before[r]) - _prefix_tokens(plan, a)
            rec = {"session_id": ids[a], "parent_id": ids[plan.parent[a]] if plan.parent[a] >= 0 else "",
                   "timestamp_s": float(arrival_s[r]), "new_input_tokens": new, "output_tokens": int(plan.osl[r])}
            if plan.parent[a] >= 0 and plan.turn[r] == 0:
                rec["fork_tokens"] = int(plan.fork_tokens[a])
            f.write(json.dumps(rec) + "\n")


def _prefix_tokens(plan: SessionPlan, a: int) -> int:
    tot, x = int(plan.system_tokens), a
    while plan.parent[x] >= 0:
        tot += int(plan.fork_tokens[x])
        x = int(plan.parent[x])
    return tot
