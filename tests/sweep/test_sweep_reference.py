"""The sweep against the engine one configuration at a time: every point of a tk.sweep grid (explicit layouts,
decode and prefill, dense and MoE) is Deployment.run on that point's scalars, bit for bit (NaN where it does not
fit or is invalid, with the same reason code)."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.sweep_eval import WINDOW_REASON
from tokenomy.answers.sweeps import run, spec_of
from tokenomy.core.layout import Layout

GRIDS = {
    "decode": dict(model=["llama-3.1-8b", "qwen3-30b-a3b"], hardware="hgx-h100-8", tp=[1, 2, 8],
                   batch=list(range(1, 90, 7)), context=[1, 1000, 8192, 131072]),
    "prefill": dict(model=["llama-3.1-70b"], hardware="hgx-h100-8", kind="prefill", tp=[4, 8], batch=[1, 3],
                    context=[512, 4096], len_pass=[128, 512, 8192]),
}
VARS = ("step_s", "compute_s", "memory_s", "comms_s", "overhead_s", "tokens_per_s_per_chip", "tokens_per_s_per_user",
        "mfu", "memory_per_chip_bytes")


@pytest.mark.parametrize("name", list(GRIDS))
def test_points_are_deployment_run(name):
    axes = GRIDS[name]
    ds = run(spec_of(axes))
    rng = np.random.default_rng(3)
    for _ in range(40):
        m, tp, b, c = (axes[k][int(rng.integers(len(axes[k])))] for k in ("model", "tp", "batch", "context"))
        at = dict(model=m, tp=tp, batch=b, context=c)
        S = 1.0
        if "len_pass" in axes:
            S = float(axes["len_pass"][int(rng.integers(len(axes["len_pass"])))])
            at["len_pass"] = int(S)
        point = ds.sel(**{k: v for k, v in at.items() if k in ds.dims})
        dep = deployment(m, axes["hardware"], layout=Layout(tp))
        with np.errstate(all="ignore"):
            r = dep.run(float(b), float(c), S)
        if S > c:  # the sweep's own code: a pass longer than its context
            assert np.isnan(float(point["step_s"]))
            continue
        if c > (dep.model.max_position_embeddings or np.inf):  # the one window rule: marked, never a number
            assert np.isnan(float(point["step_s"])) and int(point["reason"]) == WINDOW_REASON
            continue
        for k in VARS:
            assert np.array_equal(np.asarray(point[k].values), np.asarray(getattr(r, k)), equal_nan=True), (k, at)
        assert int(point["reason"]) == int(r.reason)
