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


LOST_GROUP = pytest.StashKey[str]()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup` (make test) a worker's items carry their xdist_group in the nodeid (``...@name``), which
    is all the scheduler reads: a test sharing an expensive per-process cache with its group (kv_tiering.scored) on
    the other worker pays it twice. pytest 9.2 dropped that suffix without a word (pytest-dev/pytest-xdist#1386):
    each grouped test then fails, saying so."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if any(True for _ in item.iter_markers("xdist_group")) and "@" not in item.nodeid:
            item.stash[LOST_GROUP] = ("--dist loadgroup lost this test's xdist_group: pytest-xdist cannot group under "
                                      "this pytest (pytest-dev/pytest-xdist#1386); install pyproject's dev extra "
                                      "(pytest<9.2)")


@pytest.fixture(autouse=True)
def _grouped_as_marked(request):
    if LOST_GROUP in request.node.stash:
        pytest.fail(request.node.stash[LOST_GROUP])
