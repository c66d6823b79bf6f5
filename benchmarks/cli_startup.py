"""CLI start-up: `tokenomy --help` and a simple answer as processes vs `python -c "import numpy"` (median of N runs,
the ratio in the same run), then `python -X importtime` naming the heaviest imports of each.

    .venv/bin/python benchmarks/cli_startup.py [N] [--before SRC]   (goal, issue 14: both within 2.5x the numpy import)

--before SRC also times the same commands from another checkout's src/ (e.g. `git archive <rev> src | tar -x -C
/tmp/old`, then --before /tmp/old/src), interleaved with these, so before/after share one machine state.
The load average is printed: numpy's import starts its BLAS threads, so on a busy 2-core machine the baseline
slows more than the CLI does and the ratio falls; compare ratios measured at similar load.

Bytecode as an installed package has it: the runs write and read .pyc files under a temporary PYTHONPYCACHEPREFIX
(a warm-up run fills it), even where PYTHONDONTWRITEBYTECODE is set, so compiling tokenomy's sources on every
start (~40 ms) is not counted; nothing is written into the source tree.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import record

BIN = Path(sys.executable).parent
BASELINE = "python -c 'import numpy'"
DECODE = ["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1,64", "--json"]


def tokenomy(src: str | None = None) -> list[str]:
    """The console script's body as a command (from ``src`` first on sys.path when given)."""
    path = f"sys.path.insert(0, {src!r}); " if src else ""
    return [sys.executable, "-c", f"import sys; {path}from tokenomy.cli import main; sys.argv[0] = 'tokenomy'; main()"]


def cases(before: str | None = None) -> dict[str, list[str]]:
    out = {BASELINE: [sys.executable, "-c", "import numpy"],
           "tokenomy --help": tokenomy() + ["--help"], "tokenomy decode ... --json": tokenomy() + DECODE}
    if before:
        out.update({"before: tokenomy --help": tokenomy(before) + ["--help"],
                    "before: tokenomy decode ... --json": tokenomy(before) + DECODE})
    return out


def bytecode_env(cache_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": cache_dir}


ENV = bytecode_env(tempfile.mkdtemp(prefix="tokenomy-pyc-"))


def run_s(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run as a process; CPU = user + system time of the child (os.wait4), which other
    work on a shared machine changes far less than the wall time."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def medians_s(cases: dict[str, list[str]], n: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) time of each command over n rounds; the rounds interleave the commands, so a load change
    on a shared machine hits the baseline and the commands alike."""
    for cmd in cases.values():
        run_s(cmd)  # warm-up: fills the bytecode cache and the page cache
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in cases}
    for _ in range(n):
        for label, cmd in cases.items():
            times[label].append(run_s(cmd))
    return {label: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
            for label, t in times.items()}


def heaviest(cmd: list[str], k: int = 8) -> list[tuple[int, str]]:
    """Top-level-ish imports by cumulative microseconds (python -X importtime)."""
    err = subprocess.run([cmd[0], "-X", "importtime"] + cmd[1:], capture_output=True, text=True, env=ENV).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum, name = (x.strip() for x in line[len("import time:"):].split("|"))
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 2:
            rows.append((int(cum), name.strip()))
    return sorted(rows, reverse=True)[:k]


def main(n: int = 15, before: str | None = None) -> None:
    runs = cases(before)
    meds = medians_s(runs, n)
    base_wall, base_cpu = meds[BASELINE]
    print(f"median of {n} runs; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'':36s} {'wall (median)':>22s} {'CPU user+sys (median)':>26s}")
    for label, (wall, cpu) in meds.items():
        print(f"{label:36s} {wall * 1e3:8.1f} ms {wall / base_wall:5.2f}x numpy {cpu * 1e3:10.1f} ms "
              f"{cpu / base_cpu:5.2f}x numpy")
    record("cli_startup", {"help_s": meds["tokenomy --help"][0], "decode_json_s": meds["tokenomy decode ... --json"][0],
                           "numpy_import_s": base_wall, "decode_json_vs_numpy": meds["tokenomy decode ... --json"][0] / base_wall})
    for label in ("tokenomy --help", "tokenomy decode ... --json"):
        print(f"\nheaviest imports of {label} (cumulative ms):")
        for us, name in heaviest(runs[label]):
            print(f"  {us / 1e3:7.1f}  {name}")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=15, help="runs per command (median)")
    ap.add_argument("--before", help="another checkout's src/ to time beside this one")
    a = ap.parse_args()
    main(a.n, a.before)
