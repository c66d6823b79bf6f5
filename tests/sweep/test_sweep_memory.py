"""The sweep keeps chunk-sized buffers in the heap (answers/sweep_memory.py): glibc takes the thresholds, once per
process, and a sweep's numbers do not depend on it (the allocator changes where memory comes from, not values)."""

import subprocess
import sys

import numpy as np

from tokenomy.answers import sweep_memory

SCRIPT = """
import sys, numpy as np
from tokenomy.answers import sweep_memory, sweeps
if sys.argv[1] == "tuned":
    assert sweep_memory.keep_chunk_buffers()
else:
    sweep_memory._done = True  # as if already set: leave glibc's defaults
ds = sweeps.run(sweeps.spec_of(dict(model="llama-3.1-8b", hardware="hgx-h100-8", tp=[1, 2], batch=list(range(1, 65)),
                                    context=[1024, 8192, 65536])))
np.save(sys.argv[2], ds.step_s.values)
"""


def test_glibc_takes_the_thresholds_once():
    assert sweep_memory.keep_chunk_buffers() is True  # Linux with glibc, as this project's machines
    assert sweep_memory.keep_chunk_buffers() is True


def test_the_numbers_do_not_depend_on_the_allocator(tmp_path):
    out = {}
    for mode in ("tuned", "default"):
        path = tmp_path / f"{mode}.npy"
        subprocess.run([sys.executable, "-c", SCRIPT, mode, str(path)], check=True)
        out[mode] = np.load(path)
    np.testing.assert_array_equal(out["tuned"], out["default"])
    assert np.isfinite(out["tuned"]).sum() > 0
