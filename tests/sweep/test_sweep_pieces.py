"""A chunk of explicit-layout passes is evaluated in pieces of PIECE_POINTS points (sweep_eval): the pieces give
the numbers of one engine call over the chunk bit for bit, and each point those of Deployment.run on it alone."""

import numpy as np
import pytest

from tokenomy.answers import sweep_eval
from tokenomy.answers.resolve import deployment
from tokenomy.answers.sweeps import run, spec_of
from tokenomy.core.layout import Layout

AXES = dict(model=["llama-3.1-8b", "qwen3-30b-a3b"], hardware="hgx-h100-8", tp=[1, 2, 8], batch=list(range(1, 90, 7)),
            context=[1, 1000, 8192, 131072])


def _values(monkeypatch, piece: int, axes=AXES) -> dict:
    monkeypatch.setattr(sweep_eval, "PIECE_POINTS", piece)
    ds = run(spec_of(axes))
    return {k: np.asarray(ds[k].values) for k in ds.data_vars}


@pytest.mark.parametrize("piece", [1, 5, 37])
def test_pieces_are_one_call(monkeypatch, piece):
    whole, cut = _values(monkeypatch, 1 << 30), _values(monkeypatch, piece)
    for k, v in whole.items():
        assert v.dtype == cut[k].dtype and np.array_equal(v, cut[k], equal_nan=v.dtype.kind == "f"), k


def test_prefill_pieces_are_one_call(monkeypatch):
    axes = dict(model="llama-3.1-70b", hardware="hgx-h100-8", kind="prefill", tp=[4, 8], batch=[1, 3],
                context=[512, 4096], len_pass=[128, 512, 8192])
    whole, cut = _values(monkeypatch, 1 << 30, axes), _values(monkeypatch, 3, axes)
    for k, v in whole.items():
        assert np.array_equal(v, cut[k], equal_nan=v.dtype.kind == "f"), k


def test_points_are_deployment_run(monkeypatch):
    vals = _values(monkeypatch, 5)
    rng = np.random.default_rng(3)
    for _ in range(40):
        i, j, b, c = (int(rng.integers(n)) for n in (2, 3, len(AXES["batch"]), len(AXES["context"])))
        dep = deployment(AXES["model"][i], AXES["hardware"], layout=Layout(AXES["tp"][j]))
        with np.errstate(all="ignore"):
            r = dep.run(float(AXES["batch"][b]), float(AXES["context"][c]))
        for k in ("step_s", "compute_s", "memory_s", "comms_s", "mfu", "memory_per_chip_bytes"):
            assert np.array_equal(vals[k][i, j, b, c], np.asarray(getattr(r, k)), equal_nan=True), k
        assert vals["reason"][i, j, b, c] == int(r.reason)
