"""serve's session question (tk.serve(workload='multiturn' | 'agentic')): the SessionRequest its answer
(answers/session_serve.py) takes beside the deployment, engine and run requests (answers/requests.py), and
SESSION_KEYS, the session keywords every door lists (serve's, the session sweep's less routing)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class SessionRequest:
    """serve's session question beside its deployment, engine and run (answers/requests.py): the session workload
    (a serving.sessions MultiTurn or Agentic), its load (``concurrency`` concurrent sessions or ``rate`` sessions/s;
    a ``trace`` replays its own timestamps), the think times and the DRAM bytes per node swept (None: the
    workload's, the machine's), the NVMe bytes per node, the tiering policy and the routing to compare."""

    workload: Any
    concurrency: Any = None
    rate: Any = None
    think_s: Any = None
    kv_tiering: str | None = None
    dram_bytes: Any = None
    nvme_bytes: float | None = None
    routing: str | None = None
    trace: Any = None

    @property
    def closed(self) -> bool:
        return self.concurrency is not None

    def __str__(self) -> str:
        load = "trace" if self.trace is not None else (
            f"{self.concurrency} sessions" if self.closed else f"{self.rate} sessions/s")
        return f"{self.workload.kind}: {load}; tiers {self.kv_tiering or 'HBM only'}"


# serve's session keywords, from the session request: its own fields but the load and the trace (serve's, steady
# traffic's too) and the workload's ``turns`` (a field of the workload object it builds); every door's list is this
SESSION_KEYS = ("workload", "turns") + tuple(f.name for f in fields(SessionRequest)
                                             if f.name not in ("workload", "concurrency", "rate", "trace"))
