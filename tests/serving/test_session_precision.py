"""The warm-started session solve (session_steady.solve_warm, the path of sweeps over TABLE_ABOVE points) keeps the
precision its tolerances state, against the plain solve (solve_plain: every e2e root from the wide bracket, the
definition) and against its own equations. The bounds are a few times the tolerances (HIT_TOL on |f(h) − h|,
E2E_TOL on |log e2e − log model(e2e)|, both 1e-5), far under the scan's SCAN_TOL (3e-3): a solve that solved the
crossing's e2e roots only to SCAN_TOL fails them (checked by hand when written). The looser checks beside it
(tests/serving/test_kv_che.py, test_session_solve.py: hit 1e-4, TTFT 1e-3) hold the answers, these the digits."""

import numpy as np
import pytest

from tokenomy.answers.engines import engine_profile
from tokenomy.answers.resolve import deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.kv_capacity import kv_tokens
from tokenomy.serving.session_state import problem
from tokenomy.serving.session_steady import E2E_TOL, HIT_TOL, solve_plain, solve_warm
from tokenomy.serving.sessions import Agentic, MultiTurn


@pytest.mark.parametrize("w,closed", [(MultiTurn(), True), (MultiTurn(), False), (Agentic(), True)],
                         ids=["chat-closed", "chat-open", "agentic-closed"])
def test_the_warm_solve_holds_the_stated_tolerances(w, closed):
    """Llama-3.1-8B on one H100 with vLLM, a DRAM tier of 0-4e6 tokens, think 1-60 s, 40 points of 1-400 sessions
    (closed) or 0.005-0.3 sessions/s (open): hit rates within 3·HIT_TOL of the plain solve's, e2e within
    10·E2E_TOL relative, the same bistable points (both solves' answers lie in bands of those widths about the
    fixed point; where the closed loop's jump leaves none, both close on the same jump)."""
    dep, prof = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1)), engine_profile("vllm", 1)
    bpt = float(np.ravel(kv_tokens(dep, prof, 8192.0).bytes_per_token)[0])
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 0.0, bpt / 64e9, 1e-5)), prefill_s_per_token=3e-5)
    rng = np.random.default_rng(23)
    n = 40
    load = rng.uniform(1.0, 400.0, n) if closed else rng.uniform(0.005, 0.3, n)
    kw = dict(concurrency=load) if closed else dict(rate=load)
    pb = problem(dep, prof, w, stack, rng.uniform(0.0, 4e6, n)[:, None], think_s=rng.uniform(1.0, 60.0, n), **kw)
    fast, plain = solve_warm(pb), solve_plain(pb)
    ok = np.isfinite(plain.e2e_s)
    assert ok.sum() > n // 2 and np.array_equal(ok, np.isfinite(fast.e2e_s))
    assert np.max(np.abs(fast.hits.hit_rate - plain.hits.hit_rate)) < 3 * HIT_TOL
    assert np.max(np.abs(fast.e2e_s[ok] / plain.e2e_s[ok] - 1.0)) < 10 * E2E_TOL
    assert np.array_equal(fast.bistable, plain.bistable)
