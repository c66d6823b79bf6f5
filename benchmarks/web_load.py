"""Load test of ``tokenomy web``: N requests fired at once on loopback; latency percentiles and errors.

Starts the real command (``tokenomy web --port <free>``) in a subprocess, waits until it answers, warms each
URL once, then sends all requests concurrently (one connection each) over a mix of pages, htmx fragments and
API calls, and prints p50/p95/p99/max latency, throughput and the count of non-2xx answers or failures.
Target: no errors. Run: .venv/bin/python benchmarks/web_load.py [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


def start_server(port: int) -> subprocess.Popen:
    exe = Path(sys.executable).parent / "tokenomy"
    proc = subprocess.Popen([str(exe), "web", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
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


async def burst(base: str, n: int) -> tuple[list[float], list[str], float]:
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        for url, headers in URLS:  # warm: first-use caches (catalog, coefficients, templates)
            await one(client, url, headers)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    port = free_port()
    proc = start_server(port)
    try:
        lat, errors, wall = asyncio.run(burst(f"http://127.0.0.1:{port}", args.requests))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    ms = np.array(lat) * 1e3
    summary = {"requests": args.requests, "concurrent": args.requests, "errors": len(errors),
               "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
               "p99_ms": float(np.percentile(ms, 99)), "max_ms": float(ms.max()), "wall_s": wall,
               "requests_per_s": args.requests / wall, "urls": len(URLS)}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{args.requests} concurrent requests over {len(URLS)} URLs on loopback (one uvicorn worker):")
        print(f"  latency p50 {summary['p50_ms']:.0f} ms, p95 {summary['p95_ms']:.0f} ms, "
              f"p99 {summary['p99_ms']:.0f} ms, max {summary['max_ms']:.0f} ms")
        print(f"  all answered in {wall:.2f} s ({summary['requests_per_s']:.0f} requests/s); errors: {len(errors)}")
        for e in sorted(set(errors))[:10]:
            print("   ", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
