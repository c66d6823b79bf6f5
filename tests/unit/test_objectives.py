"""One place chooses layouts (answers/objectives.py): each door's choice is the one search's choice for its
objective, the rules the doors print are the objectives' words, and no other module scores layouts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.answers import objectives
from tokenomy.answers.objectives import (DECODE_POOL, FASTEST_STEP, GOODPUT_PER_USD, OBJECTIVES, PREFILL_POOL, TCO,
                                         TOKENS_PER_CHIP, WORKLOAD, Objective, Term)
from tokenomy.answers.resolve import deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.steady import Prefix, Sending

SRC = Path(tk.__file__).parent
THE_ONE = "answers/objectives.py"


def _modules():
    for p in sorted(SRC.rglob("*.py")):
        yield p.relative_to(SRC).as_posix(), p.read_text()


def test_no_other_module_names_a_rule_or_an_objective():
    # a module-level *RULE* constant, an Objective or a Term built anywhere else is a second rule
    found = [(name, m.group(0)) for name, text in _modules() if name != THE_ONE
             for m in re.finditer(r"(?m)^[A-Z_]*RULE[A-Z_]*\s*=|\bObjective\(|\bTerm\(", text)]
    assert found == []


def test_no_search_module_sorts_its_candidates():
    # parallel/ enumerates and evaluates layouts (search, train_search); ordering them is the objectives' (a sort
    # by a key or an argsort there is a rule of its own)
    found = [(name, m.group(0)) for name, text in _modules() if name.startswith("parallel/")
             for m in re.finditer(r"\.sort\(key=|sorted\([^)]*key=|argsort\(", text)]
    assert found == []


def test_no_other_module_orders_candidates_lexicographically():
    # lexsort is how a rule with ties is written; the Pareto front (parallel/search.py: no choice, every point no
    # other beats on both axes) is the one other use
    users = {name for name, text in _modules() if "lexsort" in text}
    assert users == {THE_ONE, "parallel/search.py"}
    pareto = (SRC / "parallel/search.py").read_text().split("def pareto(")[1].split("\ndef ")[0]
    assert (SRC / "parallel/search.py").read_text().count("lexsort") == pareto.count("lexsort") == 1


def test_the_old_rules_are_gone():
    gone = ("BEST_LAYOUT_RULE", "WORKLOAD_RULE", "layout_score", "rule_score", "best_scored", "_decode_choice(dep, D,"
            " C, R, isl, osl, engine,", "def prefill_choice(dep: Deployment")
    assert [(n, g) for n, t in _modules() for g in gone if g in t] == []


def test_rank_is_lexicographic_with_requirements_first():
    obj = Objective("t", "test", "candidates", (Term("a", "count", "a"), Term("t", "min_log", "t")),
                    (Term("ok", "count", "ok"),))
    cols = {"ok": [1, 1, 0, 1], "a": [[1, 1], [1, 1], [1, 1], [1, 0]], "t": [[2.0, 2.0], [1.0, 4.0], [0.1, 0.1],
                                                                        [0.1, np.nan]]}
    # 0 and 1 fit both points with the same geometric mean (2): a tie kept in order; 2 is not allowed; 3 fits one
    assert objectives.rank(obj, cols) == [0, 1, 3]
    assert list(objectives.best_each(obj, cols)) == [3, 0]  # point 0: 3's 0.1 (2 not allowed); point 1: 2 s < 4 s
    assert "of candidates, ok, the one with a, then t" == obj.rule()


def test_best_each_is_rank_at_each_point():
    rng = np.random.default_rng(1)
    cols = {"valid": rng.random((30, 5)) > 0.2, "fits": rng.random((30, 5)) > 0.5,
            "step_s": rng.lognormal(size=(30, 5)), "memory_share": rng.random((30, 5))}
    each = objectives.best_each(FASTEST_STEP, cols)
    for j in range(5):
        order = objectives.rank(FASTEST_STEP, {k: v[:, j] for k, v in cols.items()})
        assert each[j] == (order[0] if order else 0)


def test_objectives_are_named_and_say_what_they_maximise():
    assert set(OBJECTIVES) == {"fastest-step", "tokens-per-chip", "workload", "decode-pool", "prefill-pool",
                               "fastest-train-step", "goodput-per-usd", "tokens-per-joule", "tco"}
    for o in OBJECTIVES.values():
        text = o.rule(chips=8, n=3)
        assert all(t.words in text for t in (*o.terms, *o.requires)) and "{" not in text


def _step_choice(dep, chips, B, C):
    """FASTEST_STEP over every valid layout of exactly ``chips``, each run through the engine here."""
    from tokenomy.parallel.search import candidate_layouts

    P = candidate_layouts(dep.shape, chips, dep.topo.domain_size, exact=True)
    n = np.size(P.tp)
    lays = [P.at((n,), i) for i in range(n)]
    runs = [dep.with_(layout=lay).run(np.asarray(B, float), np.asarray(C, float)) for lay in lays]
    valid = [not any(0 < int(x) < tk.core.engine.FIRST_POINT_REASON for x in np.ravel(r.reason)) for r in runs]
    cols = {"valid": valid, "fits": [np.ravel(r.reason == 0) for r in runs],
            "step_s": [np.ravel(np.where(r.reason == 0, r.step_s, np.nan)) for r in runs],
            "memory_share": [float(np.mean(r.memory_per_chip_bytes / r.hbm_bytes)) for r in runs]}
    return lays[objectives.rank(FASTEST_STEP, cols)[0]]


@pytest.mark.parametrize("model, hw, batch", [("llama-3.1-70b", "hgx-h100-8", [1, 64]),
                                              ("qwen3-30b-a3b", "hgx-h100-8", [8, 256])])
def test_decode_chooses_by_the_fastest_step(model, hw, batch):
    import tokenomy.core.engine  # noqa: F401  (tk.core.engine above)

    r = tk.decode(model, hw, batch=batch, context=[4096])
    dep = deployment(model, hw, layout=Layout())
    assert r.extra["plan"]["label"] == _step_choice(dep, 8, batch, [4096] * len(batch)).label()
    assert r.extra["layout_rule"] == FASTEST_STEP.rule(chips=8)


def test_the_sweep_chooses_each_point_as_decode_would_alone():
    ds = tk.sweep(model="llama-3.1-8b", hardware="hgx-h100-8", batch=[1, 256], context=[1024, 32768])
    for b in (1, 256):
        for c in (1024, 32768):
            plan = tk.decode("llama-3.1-8b", "hgx-h100-8", batch=[b], context=[c]).extra["plan"]
            pt = ds.sel(batch=b, context=c)
            assert (int(pt.plan_tp), int(pt.plan_dp), int(pt.plan_pp)) == (plan["tp"], plan["dp"], plan["pp"])


def test_plan_picks_the_most_tokens_per_chip_among_the_feasible():
    r = tk.plan("llama-3.1-70b", "hgx-h100-8", min_tokens_per_user=30)
    best = r.extra["best"]
    assert best["tokens_per_s_per_user"] >= 30
    assert best["tokens_per_s_per_chip"] == max(x["tokens_per_s_per_chip"] for x in r.rows())
    assert TOKENS_PER_CHIP.rule(chips=8) in " ".join(r.notes)


@pytest.mark.parametrize("objective", [GOODPUT_PER_USD, TCO])
def test_a_serving_plan_is_best_by_its_objective(objective):
    r = tk.plan("llama-3.1-8b", "hgx-h100-8", concurrency=[16], isl=1024, osl=256, tpot_slo=0.05,
                objective=objective.name)
    key = objective.terms[0].column
    best = r.extra["best"]
    assert best is not None and all(x[key] <= best[key] for x in r.rows())
    assert r.extra["rule"] == objective.rule() and objective.rule() in r.title


def test_serve_chooses_by_the_workload_objective():
    from tokenomy.answers.requests import EngineRequest
    from tokenomy.answers.serve_layout import candidates, ranking_batch, workload_columns

    r = tk.serve("qwen3-32b", "hgx-h100-8", rate=[0.5, 4.0], isl=2048, osl=512)
    dep = deployment("qwen3-32b", "hgx-h100-8", layout=Layout(), kv_dtype="bf16", serving_engine="vllm")
    eng = EngineRequest("vllm")
    first, rest, _ = candidates(dep, 8, ranking_batch(None, 256), 2048.0, 512.0, eng)
    w = dict(concurrency=None, rate=np.array([0.5, 4.0]), sending=Sending("staggered"), prefix=Prefix(0.0))
    cols = workload_columns(dep, first, eng, 2048.0, 512.0, w)
    i = objectives.rank(WORKLOAD, cols)[0]
    assert cols["meets"][i].all()  # the first stage's best holds both rates: the rest is not searched
    assert r.extra["plan"]["label"] == first[i].label()
    assert r.extra["layout_rule"] == WORKLOAD.rule(n=len(first))


def test_disaggregated_pools_choose_by_their_objectives():
    from tokenomy.answers.engines import engine_profile
    from tokenomy.answers.layout_search import ranked_layouts
    from tokenomy.serving.disagg import (PoolDoesNotFit, checked_capacity, decode_load, decode_pool, prefill_columns,
                                         prefill_table)

    kw = dict(rate=[2.0], isl=2048, osl=256)
    r = tk.serve("llama-3.1-8b", "hgx-h100-8", mode="disagg", pools={"prefill_chips": 2, "decode_chips": 4}, **kw)
    row = r.rows()[0]
    dep = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(), kv_dtype="bf16", serving_engine="vllm")
    # decode pool: DECODE_POOL over its ranked layouts (8 first; all hold 2 req/s here, so no second stage)
    ranked = ranked_layouts(dep, 4, np.unique(np.maximum(np.round(_b0(dep) / 2.0 ** np.arange(8)), 1)),
                            2048 + 128, 1.0)[:8]
    cols = {"holds": [], "decode_s": [], "requests_per_s": []}
    for lay in ranked:
        try:
            d = decode_load(decode_pool(dep.with_(layout=lay), engine_profile("vllm", int(lay.tp)), 2048.0, 256.0),
                            256.0, None, np.array([2.0]))
            vals = (d.holds, d.decode_s, d.requests_per_s)
        except PoolDoesNotFit:
            vals = ([0.0], [np.nan], [0.0])
        for k, v in zip(cols, vals):
            cols[k].append(np.ravel(np.asarray(v, float)))
    pick = ranked[objectives.rank(DECODE_POOL, cols)[0]]
    assert row["decode_plan"]["label"] == pick.label()
    # prefill pool: PREFILL_POOL over its table at the decode pool's rate, the first that keeps up when checked
    table = prefill_table(dep, engine_profile("vllm"), 2, 2048.0)
    prof = lambda tp: engine_profile("vllm", tp)  # noqa: E731
    order = objectives.rank(PREFILL_POOL, prefill_columns(table, 2.0))  # the decode pool holds 2 req/s: X_d = 2
    mu = [checked_capacity(dep, prof, table, i, 2048.0) for i in order]
    first_ok = next(i for i, m in zip(order, mu) if not isinstance(m, str) and m >= 2.0)
    assert row["prefill_plan"]["label"] == table.layouts.at((np.size(table.b_max),), first_ok).label()


def _b0(dep):
    """The open loop's running batch the decode pool ranks at: Little's law at the batch-1 layout's step."""
    from tokenomy.answers.layout_search import ranked_layouts

    one = dep.with_(layout=ranked_layouts(dep, 4, 1.0, 2048 + 128, 1.0)[0])
    return min(max(2.0 * 256 * float(one.run(float(one.layout.dp), 2048 + 128).step_s), 1.0), 256 * 4)


def test_train_search_ranks_by_the_fastest_train_step():
    from tokenomy.answers.objectives import FASTEST_TRAIN_STEP
    from tokenomy.answers.training import train

    r = train(model="llama-3.1-8b", hardware="h100-sxm", chips=8, seq_len=4096, global_batch=[64], search=True)
    steps = [x["step_s"] for x in r.rows()]
    assert steps == sorted(steps) and all(x["fits"] for x in r.rows())
    assert FASTEST_TRAIN_STEP.rule(chips=8) in r.title
