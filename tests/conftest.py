"""Suite-wide settings: no test depends on wall-clock speed, so hypothesis runs without deadlines everywhere; every
process of the suite (the pytest workers and the commands they start) runs one OpenMP/BLAS thread."""

import os

# `make test` runs two workers on two cores: a second intra-op thread per process (torch's OpenMP pool, OpenBLAS's)
# only spin-waits on a core the other worker holds. Measured under load: `tokenomy revnet-demo --steps 6 --size nano
# --layers 4` took 19.2 CPU-s with torch's default two threads, 3.6 with one. Set here, before a worker imports torch
# or numpy (they read it when they load) and before any test starts a process (it inherits the environment).
os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402
import pytest
from hypothesis import settings

settings.register_profile("tokenomy", deadline=None)
settings.load_profile("tokenomy")

HOPPER_ERRORS = np.linspace(-0.1, 0.2, 12)  # a Hopper regime's leave-one-source-out time errors


@pytest.fixture()
def hopper_bands(monkeypatch):
    """An error-band table of Hopper cases only (every metric, batches 1-64, length <= 2k, errors
    HOPPER_ERRORS) in place of catalog/efficiency/error_bands.toml, for the tests of how answers carry a band."""
    from tokenomy.answers import error_bars
    from tokenomy.validation import bands as vb

    rows = [{"metric": m, "chip_family": "hopper", "engine": "vllm", "moe": False, "mode": "agg", "batch": b,
             "length": 1500.0, "calibrated_error": float(e)}
            for m in ("tpot_s", "ttft_s", "throughput_per_chip") for b in (4.0, 32.0) for e in HOPPER_ERRORS]
    monkeypatch.setattr(error_bars, "_bands", lambda: tuple(vb.compute(rows)))
    error_bars._find.cache_clear()
    yield HOPPER_ERRORS
    error_bars._find.cache_clear()
