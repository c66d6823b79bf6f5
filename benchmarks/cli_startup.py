"""CLI start-up: `tokenomy --help` and a simple answer as processes vs `python -c "import numpy"` (median of N runs,
the ratio in the same run), then `python -X importtime` naming the heaviest imports of each.

    .venv/bin/python benchmarks/cli_startup.py [N]      (goal, issue 14: both within 2.5x the numpy import)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TOKENOMY = [sys.executable, "-c", "import sys; from tokenomy.cli import main; sys.argv[0] = 'tokenomy'; main()"]
CASES = {
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "tokenomy --help": TOKENOMY + ["--help"],
    "tokenomy decode ... --json": TOKENOMY + ["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8",
                                              "--batch", "1,64", "--json"],
}


def median_s(cmd: list[str], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def heaviest(cmd: list[str], k: int = 8) -> list[tuple[int, str]]:
    """Top-level-ish imports by cumulative microseconds (python -X importtime)."""
    err = subprocess.run([cmd[0], "-X", "importtime"] + cmd[1:], capture_output=True, text=True).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum, name = (x.strip() for x in line[len("import time:"):].split("|"))
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 2:
            rows.append((int(cum), name.strip()))
    return sorted(rows, reverse=True)[:k]


def main(n: int = 15) -> None:
    base = None
    for label, cmd in CASES.items():
        med = median_s(cmd, n)
        base = base or med
        print(f"{label:32s} median {med * 1e3:7.1f} ms   {med / base:4.2f}x numpy")
    for label, cmd in list(CASES.items())[1:]:
        print(f"\nheaviest imports of {label} (cumulative ms):")
        for us, name in heaviest(cmd):
            print(f"  {us / 1e3:7.1f}  {name}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
