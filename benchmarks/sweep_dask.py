"""Dask speed, measured in one run: a sweep of --points points (default 10^8) streamed to Parquet by 1 and by 2 local
worker processes, each worker writing its own parts (sweep --dask --out; the client receives tallies only), beside
the same sweep written to one file in process. The three are interleaved, --rounds times; every figure is a median.

Wall time on this project's shared 2-core machine is not the workers' speed: the kernel shares the cores between
sessions (sched_autogroup), so all of a session's processes together get one session's share, and a second worker
cannot double it while other sessions keep the cores busy. So every run also reads the CPU-seconds of each process
(each worker through client.run, the client's own with the scheduler and the nannies in it) and the speed-up is
quoted both ways:

- wall: the 1-worker wall time over the 2-worker one, with the load average beside it;
- CPU: the busiest process's CPU-seconds with 1 worker over the same with 2 (on free cores, a run lasts as long as
  its busiest process computes); the client's CPU-seconds printed beside, to show it is not the bound.

Each worker's CPU-seconds per chunk against the in-process run's say what running under Dask costs: its nanny
starts each worker with MALLOC_TRIM_THRESHOLD_=65536 (distributed.nanny.pre-spawn-environ), which turns off glibc's
adaptive mmap threshold, so every array over 128 KiB is mapped fresh and faulted in page by page (the minor page
faults per chunk are printed); its statistical profiler and heartbeats run beside the task. Neither is the library's
to change (a user's cluster is the user's; the library sets nothing process-wide). So the clusters run twice,
interleaved: as dask starts them ("dask trim") and as a user may configure them through dask's public config
("adaptive": distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_ set to None, which dask documents as
unsetting it, for this benchmark's clusters only; a user's `dask worker` reads it from a YAML file, docs/sweeps.md),
each speed-up quoted.
Run: .venv/bin/python benchmarks/sweep_dask.py [--points N] [--rounds R]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import tempfile
import time

from results import record
from sweep import DENSE, HARDWARE, TP, big_axes

from tokenomy.answers.sweeps import chunks, run, spec_of

CHUNK_POINTS = 1 << 20


def _usage() -> tuple[float, int]:
    """(CPU-seconds, minor page faults) of the calling process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt


def in_process(spec, folder: str) -> dict:
    """The sweep written to one Parquet file by this process: wall s, CPU-s, page faults."""
    cpu0, flt0 = _usage()
    t0 = time.perf_counter()
    run(spec, out=os.path.join(folder, "local.parquet"))
    wall = time.perf_counter() - t0
    cpu1, flt1 = _usage()
    os.remove(os.path.join(folder, "local.parquet"))
    return {"wall_s": wall, "worker_cpu_s": [cpu1 - cpu0], "client_cpu_s": 0.0, "faults": flt1 - flt0}


TRIM = "MALLOC_TRIM_THRESHOLD_"


@contextlib.contextmanager
def nanny_trim(setting: str):
    """The nanny's environment for the clusters started inside: "dask" as dask sets it (its pre-spawn-environ sets
    TRIM), "adaptive" with TRIM unset through dask's public config. A nanny writes its pre-spawn environment into
    the process that starts it (distributed.yaml: "this leaks variables into the nanny process"), and a variable
    already there wins over the config, so this benchmark's own environment is put back as it was, both ways."""
    import dask

    saved = os.environ.pop(TRIM, None)
    try:
        if setting == "adaptive":
            with dask.config.set({f"distributed.nanny.pre-spawn-environ.{TRIM}": None}):
                yield
        else:
            yield
    finally:
        os.environ.pop(TRIM, None)
        if saved is not None:
            os.environ[TRIM] = saved


def on_workers(spec, n: int, folder: str, trim: str = "dask") -> dict:
    """The sweep written as parts by ``n`` local worker processes (one thread each), their nannies' environment
    ``trim`` (nanny_trim): wall s, each worker's CPU-s and the client process's (scheduler and nannies included),
    the workers' page faults."""
    from distributed import Client, LocalCluster

    with nanny_trim(trim), LocalCluster(n_workers=n, processes=True, threads_per_worker=1,
                                        dashboard_address=None) as cl, Client(cl) as c:
        # warm every worker: imports, and each model's deployment at each tp (cached per process)
        c.run(lambda: run(spec_of(dict(model=list(DENSE), hardware=HARDWARE, tp=list(TP)))))
        trims = set(c.run(lambda: os.environ.get(TRIM)).values())  # what each worker process started with
        before, me0 = c.run(_usage), _usage()
        t0 = time.perf_counter()
        run(spec, out=os.path.join(folder, f"parts-{n}.parquet"), client=c)
        wall = time.perf_counter() - t0
        after, me1 = c.run(_usage), _usage()
    shutil.rmtree(os.path.join(folder, f"parts-{n}.parquet"))
    return {"wall_s": wall, "worker_cpu_s": [after[w][0] - before[w][0] for w in before],
            "client_cpu_s": me1[0] - me0[0], "faults": sum(after[w][1] - before[w][1] for w in before),
            "trim": trims}


def busiest(r: dict) -> float:
    return max(max(r["worker_cpu_s"]), r["client_cpu_s"])


SETTINGS = ("local", (1, "dask"), (2, "dask"), (1, "adaptive"), (2, "adaptive"))


def run_one(what, spec, folder: str) -> dict:
    return in_process(spec, folder) if what == "local" else on_workers(spec, what[0], folder, what[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=float, default=1e8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    spec = spec_of(big_axes(int(args.points)), {"variables": ["step_s"], "chunk_points": CHUNK_POINTS})
    n_chunks = len(chunks(spec))
    load0 = os.getloadavg()[0]
    runs: dict = {w: [] for w in SETTINGS}
    with tempfile.TemporaryDirectory() as d:
        for k in range(args.rounds):  # interleaved; the order turns each round so no setting always goes first
            for what in SETTINGS[k % len(SETTINGS):] + SETTINGS[:k % len(SETTINGS)]:
                runs[what].append(run_one(what, spec, d))
    med = lambda what, f: statistics.median(f(r) for r in runs[what])  # noqa: E731
    wall = {w: med(w, lambda r: r["wall_s"]) for w in runs}
    cpu = {w: med(w, busiest) for w in runs}
    per_chunk = {w: med(w, lambda r: sum(r["worker_cpu_s"]) / n_chunks) for w in runs}
    faults = {w: med(w, lambda r: r["faults"] / n_chunks) for w in runs}
    client = {w: med(w, lambda r: r["client_cpu_s"]) for w in SETTINGS[1:]}
    print(f"dask, workers writing their own Parquet parts: {spec.grid.size:,} points in {n_chunks} chunks of "
          f"{CHUNK_POINTS:,}, medians of {args.rounds} interleaved rounds (load average {load0:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores)")
    for w in SETTINGS[1:]:
        seen = set().union(*(r["trim"] for r in runs[w]))
        assert seen == ({"65536"} if w[1] == "dask" else {None}), (w, seen)  # the workers ran as labelled
    for w in SETTINGS:
        name = "in process, one file" if w == "local" else f"{w[0]} worker{'s' * (w[0] > 1)}, nanny {w[1]}"
        extra = f", client {client[w]:.1f} CPU-s" if w != "local" else ""
        print(f"  {name}: wall {wall[w]:.1f} s, busiest process {cpu[w]:.1f} CPU-s{extra}; "
              f"{per_chunk[w]:.3f} worker CPU-s and {faults[w]:,.0f} page faults per chunk")
    speedup = {t: cpu[(1, t)] / cpu[(2, t)] for t in ("dask", "adaptive")}
    for t in ("dask", "adaptive"):
        print(f"speed-up, 2 workers over 1, nanny {t}: {speedup[t]:.2f}x in CPU-seconds of the busiest process, "
              f"{wall[(1, t)] / wall[(2, t)]:.2f}x in wall time (the machine's other sessions share the cores); a "
              f"worker's CPU-s per chunk over in process: {per_chunk[(1, t)] / per_chunk['local']:.2f}x")
    one, two = (1, "dask"), (2, "dask")
    record("sweep_dask", {
        "points": spec.grid.size, "chunks": n_chunks, "rounds": args.rounds, "load_average": load0,
        "local_wall_s": wall["local"], "wall_1_worker_s": wall[one], "wall_2_workers_s": wall[two],
        "speedup_wall": wall[one] / wall[two], "local_cpu_s": cpu["local"], "busiest_cpu_1_worker_s": cpu[one],
        "busiest_cpu_2_workers_s": cpu[two], "speedup_cpu": speedup["dask"], "client_cpu_2_workers_s": client[two],
        "local_cpu_s_per_chunk": per_chunk["local"], "worker_cpu_s_per_chunk_1": per_chunk[one],
        "worker_cpu_s_per_chunk_2": per_chunk[two], "local_faults_per_chunk": faults["local"],
        "worker_faults_per_chunk": faults[one],
        "adaptive_busiest_cpu_1_worker_s": cpu[(1, "adaptive")], "adaptive_busiest_cpu_2_workers_s":
            cpu[(2, "adaptive")], "adaptive_speedup_cpu": speedup["adaptive"],
        "adaptive_speedup_wall": wall[(1, "adaptive")] / wall[(2, "adaptive")],
        "adaptive_worker_cpu_s_per_chunk_1": per_chunk[(1, "adaptive")],
        "adaptive_worker_cpu_s_per_chunk_2": per_chunk[(2, "adaptive")],
        "adaptive_worker_faults_per_chunk": faults[(1, "adaptive")]})


if __name__ == "__main__":
    main()
