"""The speed figures the README and docs/speed.md quote, saved by the benchmark that measured them.

Speed is measured only here, never in a test, so the docs cannot recompute it: each benchmark calls ``record`` at the
end of its run and `docs/numbers.py` quotes `benchmarks/results.json` with the run it names (UTC time, git commit,
CPU count, load average). Rerun a benchmark to replace its entry; commit the file with the change it measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results.json"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=RESULTS.parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def record(bench: str, figures: dict[str, float], path: Path = RESULTS) -> None:
    """Replace ``bench``'s entry in the results file with these figures and the run that measured them."""
    data = json.loads(path.read_text()) if path.exists() else {}
    data[bench] = {
        "run": {"utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "commit": _commit(),
                "cpus": os.cpu_count(), "load_average": round(os.getloadavg()[0], 2),
                "command": " ".join(["python"] + [Path(sys.argv[0]).as_posix()] + sys.argv[1:])},
        "figures": {k: float(v) for k, v in figures.items()},
    }
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"figures saved to {path.name} [{bench}]")


def cpu_s(fn, repeats: int) -> float:
    """The median process (CPU) time of ``repeats`` runs of ``fn``."""
    import statistics

    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)
