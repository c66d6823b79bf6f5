"""The engine keeps freed grid-sized arrays in the heap (core/heap.py): glibc takes the thresholds once per process,
at the first large grid, and no number depends on it (the allocator changes where memory comes from, not values)."""

import os
import subprocess
import sys

import numpy as np

from tokenomy.core import heap

SCRIPT = """
import sys, numpy as np
from tokenomy.core import heap
from tokenomy.answers import sweeps
from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.steady import steady
assert heap.keep_freed_arrays() is (sys.argv[1] == "tuned")
ds = sweeps.run(sweeps.spec_of(dict(model="llama-3.1-8b", hardware="hgx-h100-8", tp=[1, 2], batch=list(range(1, 65)),
                                    context=[1024, 8192, 65536])))
s = steady(deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(8)), engine_profile("vllm", 8), isl=1024,
           osl=1024, concurrency=np.arange(1.0, 40_001.0))
np.save(sys.argv[2], np.concatenate([ds.step_s.values.ravel(), s.ttft_s, s.tpot_s]))
"""


FIRST_LARGE_GRID = """
import numpy as np
from tokenomy.answers.resolve import deployment
from tokenomy.core import heap
from tokenomy.core.layout import Layout
dep = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(1))
dep.run(np.arange(1.0, 65.0), 2048.0)
assert heap._set is None  # a small answer does not touch the allocator (nor load ctypes)
dep.run(np.arange(1.0, 2.0 ** 15), 2048.0)
assert heap._set is True  # the first large grid sets it, on Linux with glibc (this project's machines)
"""


def test_the_first_large_grid_sets_the_thresholds():
    subprocess.run([sys.executable, "-c", FIRST_LARGE_GRID], check=True,
                   env={k: v for k, v in os.environ.items() if k != "TOKENOMY_MALLOC"})


def test_glibc_takes_the_thresholds_once():
    assert heap.keep_freed_arrays() is True
    assert heap.keep_freed_arrays() is True


def test_the_numbers_do_not_depend_on_the_allocator(tmp_path):
    out = {}
    for mode in ("tuned", "default"):
        path = tmp_path / f"{mode}.npy"
        env = {**os.environ, "TOKENOMY_MALLOC": "default" if mode == "default" else "tuned"}
        subprocess.run([sys.executable, "-c", SCRIPT, mode, str(path)], check=True, env=env)
        out[mode] = np.load(path)
    np.testing.assert_array_equal(out["tuned"], out["default"])
    assert np.isfinite(out["tuned"]).sum() > 40_000
