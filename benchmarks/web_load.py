"""Load test of ``tokenomy web``: bursts of concurrent requests on loopback, one worker vs one per core.

For each worker count (1 and N = the cores, same run) starts the real command (``tokenomy web --port <free>
--workers W``) in a subprocess, waits until it answers, warms each URL once per worker, then for each concurrency
(10 and 200) fires that many requests at once (one connection each) over a mix of pages, htmx fragments and API
calls, a few rounds, and prints p50/p99 latency, throughput and the count of non-2xx answers or failures.
Target: no errors; N workers below one worker's p50 at 200. Run: .venv/bin/python benchmarks/web_load.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

URLS = [  # (path, headers): what a browser session and API clients ask for
    ("/serve?model=llama-3.1-70b&hardware=hgx-h100-8&batch=64&context=8192", {}),
    ("/serve?model=deepseek-v3&hardware=gb200-nvl72&batch=256&context=32768", {"HX-Request": "true"}),
    ("/serve?kind=prefill&model=qwen3-32b&hardware=h200&batch=4&context=8192", {"HX-Request": "true"}),
    ("/api/decode?model=deepseek-v3&hardware=gb200-nvl72&batch=1..4096&context=2048,32768", {}),
    ("/api/prefill?model=llama-3.1-8b&hardware=h100-sxm&batch=1,8&context=4096", {}),
    ("/api/models", {}),
    ("/api/hardware", {}),
    ("/catalog", {}),
    ("/plan?model=deepseek-v3&hardware=gb200-nvl72&top=8", {"HX-Request": "true"}),
    ("/api/train?model=llama-3.1-70b&hardware=h100-sxm&chips=1024&tp=8&pp=4&global_batch=256,512", {}),
    ("/lifecycle?demand_tokens_per_s=5e8", {}),
    ("/cache?model=deepseek-v3&hardware=hgx-h200-8&kv_dtype=fp8", {"HX-Request": "true"}),
    ("/lecture", {}),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, workers: int) -> subprocess.Popen:
    exe = Path(sys.executable).parent / "tokenomy"
    proc = subprocess.Popen([str(exe), "web", "--port", str(port), "--workers", str(workers)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/models", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("tokenomy web did not start: " + (proc.stderr.read() or b"").decode()[-400:])


async def one(client: httpx.AsyncClient, url: str, headers: dict) -> tuple[float, str | None]:
    t0 = time.perf_counter()
    try:
        r = await client.get(url, headers=headers)
        err = None if 200 <= r.status_code < 300 else f"HTTP {r.status_code} {url}"
    except httpx.HTTPError as e:
        err = f"{type(e).__name__} {url}"
    return time.perf_counter() - t0, err


async def warm(base: str, workers: int) -> None:
    """Each URL a few times per worker on fresh connections, so every process has filled its first-use caches."""
    async with httpx.AsyncClient(base_url=base, timeout=120,
                                 limits=httpx.Limits(max_keepalive_connections=0)) as client:
        for _ in range(3 * workers):
            await asyncio.gather(*(one(client, url, headers) for url, headers in URLS))


async def burst(base: str, n: int) -> tuple[list[float], list[str], float]:
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        gate = asyncio.Event()

        async def fire(i: int):
            await gate.wait()
            url, headers = URLS[i % len(URLS)]
            return await one(client, url, headers)

        tasks = [asyncio.create_task(fire(i)) for i in range(n)]
        await asyncio.sleep(0.2)  # every task is parked at the gate: release them together
        t0 = time.perf_counter()
        gate.set()
        results = await asyncio.gather(*tasks)
        wall = time.perf_counter() - t0
    return [r[0] for r in results], [r[1] for r in results if r[1]], wall


def measure(workers: int, concurrencies: list[int], rounds: int) -> list[dict]:
    """p50/p99 over ``rounds`` bursts at each concurrency, on a fresh server with ``workers`` processes."""
    port = free_port()
    proc = start_server(port, workers)
    base = f"http://127.0.0.1:{port}"
    out = []
    try:
        asyncio.run(warm(base, workers))
        for n in concurrencies:
            lat, errors, wall = [], [], 0.0
            for _ in range(rounds):
                la, er, w = asyncio.run(burst(base, n))
                lat, errors, wall = lat + la, errors + er, wall + w
            ms = np.array(lat) * 1e3
            out.append({"workers": workers, "concurrency": n, "requests": len(lat), "errors": len(errors),
                        "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
                        "requests_per_s": len(lat) / wall, "error_samples": sorted(set(errors))[:5]})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)), help="N (default: the cores)")
    ap.add_argument("--concurrency", default="10,200", help="burst sizes, comma-separated")
    ap.add_argument("--rounds", type=int, default=3, help="bursts per concurrency (percentiles over all)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    conc = [int(x) for x in args.concurrency.split(",")]
    rows = [r for w in dict.fromkeys([1, args.workers]) for r in measure(w, conc, args.rounds)]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"tokenomy web on loopback, {len(URLS)} URLs (pages, htmx fragments, /api), {args.rounds} bursts each, "
              f"{len(os.sched_getaffinity(0))} cores:")
        print(f"  {'workers':>7} {'concurrent':>10} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>7} {'errors':>6}")
        for r in rows:
            print(f"  {r['workers']:>7} {r['concurrency']:>10} {r['p50_ms']:>8.0f} {r['p99_ms']:>8.0f} "
                  f"{r['requests_per_s']:>7.0f} {r['errors']:>6}")
        by = {(r["workers"], r["concurrency"]): r for r in rows}
        for n in conc:
            if (args.workers, n) in by and args.workers != 1:
                print(f"  p50 at {n}: {args.workers} workers / 1 worker = "
                      f"{by[args.workers, n]['p50_ms'] / by[1, n]['p50_ms']:.2f}")
        for e in sorted({e for r in rows for e in r["error_samples"]})[:10]:
            print("   ", e)
    sys.exit(1 if any(r["errors"] for r in rows) else 0)


if __name__ == "__main__":
    main()
