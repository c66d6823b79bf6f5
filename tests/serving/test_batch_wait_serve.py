"""Delayed batching (TensorRT-LLM's batch_wait_timeout_iters / batch_wait_max_tokens_ratio) in serve's steady state
and as an engine setting at every door: steady_solve.solve adds the held steps (batch_wait.held_steps) to the
plain decode steps a later request waits, closed loop and open; the setting is refused by name on an engine
without it and where one of the two would leave it off."""

import numpy as np
import pytest
from cli_runner import CliRunner

from tokenomy.answers.workloads import serve
from tokenomy.serving.steady import Points, solve
from tokenomy.serving.scheduler import held_steps

A, C_STEP, B_STEP = 0.02, 1e-4, 4e-5  # t(n, P) = A + C·n + B·P seconds
ISL = OSL = 922.0
T, TOKENS = 40.0, 0.8 * 8192


def step(n, P):
    t = A + C_STEP * np.asarray(n, float) + B_STEP * np.asarray(P, float)
    return t, np.zeros(np.shape(t), int), np.zeros(np.shape(t), int)


def _points(load, on: bool):
    return Points(isl=ISL, osl=OSL, prefill=ISL, load=load, cap=np.full(load.shape, 1e9), budget=16384.0,
                  whole_prompts=True, batch_wait_iters=T if on else 0.0, batch_wait_tokens=TOKENS if on else 0.0)


def test_the_steady_state_charges_the_hold_in_plain_steps_closed_and_open():
    """Closed loop: W(a = B/life, B − 1 decodes) plain steps on TTFT alone where others decode (none at one client);
    open loop: W(a = R·t(B_d, 0), B decodes) plain steps beside the rest of the step an arrival lands in."""
    U = np.array([1.0, 16.0, 64.0, 128.0])
    off, on = (solve(step, _points(U, x), closed=True) for x in (False, True))
    W = held_steps(T, TOKENS, U / OSL, U - 1.0, ISL)  # whole prompts: one chunk, life = O steps
    assert np.allclose(on.ttft0_s - off.ttft0_s, W * off.plain_step_s * (U > 1), rtol=1e-9, atol=1e-15)
    assert np.allclose(on.tpot_s, off.tpot_s, rtol=1e-12) and np.all(on.requests_per_s[1:] < off.requests_per_s[1:])
    assert np.allclose(on.wait_steps, W, rtol=1e-12)
    R = np.array([0.5, 2.0])
    off, on = (solve(step, _points(R, x), closed=False) for x in (False, True))
    W = held_steps(T, TOKENS, R * off.plain_step_s, off.batch, ISL)
    assert np.all(W > 1.0)
    assert np.allclose(on.ttft0_s - off.ttft0_s, W * off.plain_step_s, rtol=1e-9)


def test_serve_charges_it_on_trtllm_and_only_where_it_is_on():
    kw = dict(engine="trtllm", tp=8, concurrency=[64], isl=922, osl=922)
    off = serve("deepseek-r1", "hgx-b200-8", **kw).rows()[0]
    on = serve("deepseek-r1", "hgx-b200-8", batch_wait_iters=40, batch_wait_tokens_ratio=0.8, **kw).rows()[0]
    assert on["ttft_s"] > off["ttft_s"] + 0.2  # ~25 decode steps of ~20 ms
    assert on["tpot_s"] == pytest.approx(off["tpot_s"], rel=1e-9)
    zero = serve("deepseek-r1", "hgx-b200-8", batch_wait_iters=0, batch_wait_tokens_ratio=0, **kw).rows()[0]
    assert zero["ttft_s"] == pytest.approx(off["ttft_s"], rel=1e-12)


@pytest.mark.parametrize("kw, says", [
    ({"engine": "vllm", "batch_wait_iters": 40, "batch_wait_tokens_ratio": 0.8},
     "batch_wait_iters: TensorRT-LLM's delayed batching (engine trtllm); engine vllm has none"),
    ({"engine": "trtllm", "batch_wait_iters": 40}, "batch_wait_iters: delayed batching waits only where"),
    ({"engine": "trtllm", "batch_wait_iters": 0, "batch_wait_tokens_ratio": 0.8},
     "batch_wait_iters: delayed batching waits only where batch_wait_iters and batch_wait_tokens_ratio are both above "
     "0; batch_wait_iters is 0 (the profile's where not given), and 0 turns it off; set both above 0, or both 0"),
    ({"engine": "trtllm", "batch_wait_tokens_ratio": 1.5}, "batch_wait_tokens_ratio: 1.5 is out of range"),
    ({"engine": "trtllm", "batch_wait_iters": -1}, "batch_wait_iters: -1 is out of range"),
])
def test_bad_settings_are_refused_by_name_at_every_door(kw, says):
    with pytest.raises(ValueError, match="^" + says.replace("(", r"\(").replace(")", r"\)")):
        serve("llama-3.1-8b", "h100-sxm", concurrency=[4], **kw)
    from tokenomy.cli import app, commands  # noqa: F401  (registers every command)

    args = [x for k, v in kw.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    r = CliRunner().invoke(app, ["serve", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--concurrency", "4",
                                 *args])
    out = r.output.strip()
    flag = "--" + says.split(":")[0].replace("_", "-")
    assert r.exit_code == 2 and len(out.splitlines()) == 1 and out.startswith(f"error: {flag}: "), out
    from fastapi.testclient import TestClient

    from tokenomy.web.app import create_app

    with TestClient(create_app(allowed_hosts=("testserver",))) as c:
        resp = c.get("/api/serve", params={"model": "llama-3.1-8b", "hardware": "h100-sxm", "concurrency": "4",
                                           **{k: str(v) for k, v in kw.items()}})
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"][0]["loc"][-1] == says.split(":")[0]


def test_disaggregated_serving_refuses_it_rather_than_drop_it():
    with pytest.raises(ValueError, match="^batch_wait_iters: delayed batching is modelled on aggregated serving"):
        serve("llama-3.1-8b", "hgx-h100-8", concurrency=[8], mode="disagg", engine="trtllm", batch_wait_iters=40,
              batch_wait_tokens_ratio=0.8, pools={"prefill_chips": 4, "decode_chips": 4})


def test_the_web_schema_says_omit_where_an_empty_value_is_refused():
    """An empty batch_wait_iters or max_num_tokens is a 422 naming it, so the schema tells users to omit it."""
    from fastapi.testclient import TestClient

    from tokenomy.web.app import create_app

    with TestClient(create_app(allowed_hosts=("testserver",))) as c:
        params = {p["name"]: p for p in c.get("/openapi.json").json()["paths"]["/api/serve"]["get"]["parameters"]}
        for field in ("batch_wait_iters", "batch_wait_tokens_ratio", "max_num_tokens"):
            resp = c.get("/api/serve", params={"model": "llama-3.1-8b", "hardware": "h100-sxm", "concurrency": "4",
                                               "engine": "trtllm", field: ""})
            assert resp.status_code == 422 and resp.json()["detail"][0]["loc"][-1] == field, resp.text
            assert "omit:" in params[field]["description"] and "empty" not in params[field]["description"]


def test_the_session_simulator_holds_prompts_as_the_analytic_sessions_do():
    """workload=multiturn on trtllm: the session simulator runs the engine's counter (it had ignored it: the hold on
    gave the TTFT of the hold off), within 25% of the analytic sessions' TTFT with the hold on."""
    kw = dict(engine="trtllm", workload="multiturn", concurrency=[32])
    hold = dict(batch_wait_iters=40, batch_wait_tokens_ratio=0.8)
    sim_off, sim_on, ana_on = (serve("llama-3.1-8b", "h100-sxm", method=m, **kw, **h).rows()[0]["ttft_s"]
                               for m, h in (("simulate", {}), ("simulate", hold), ("analytic", hold)))
    assert sim_on > sim_off + 0.1  # ~25 held decode steps of ~7 ms
    assert sim_on == pytest.approx(ana_on, rel=0.25)


def test_explain_and_the_engine_label_state_the_hold():
    """--explain gives T, ρ_w·N_tok and the held steps W at each point (W = the steady state's wait beyond the
    receive, the same held_steps the TTFT charges), and the profile's label names the setting; off: neither."""
    kw = dict(engine="trtllm", tp=8, concurrency=[64], isl=922, osl=922)
    on = serve("deepseek-r1", "hgx-b200-8", batch_wait_iters=40, batch_wait_tokens_ratio=0.8, **kw)
    off = serve("deepseek-r1", "hgx-b200-8", **kw)
    line = next(x for x in on.explain() if x.startswith("delayed batching"))
    assert "T = 40 iterations" in line and "0.8 x 8192 = 6553.6 tokens" in line
    W = float(line.rsplit("64: ", 1)[1])
    step = off.rows()[0]["tpot_s"]  # whole prompts beside decodes: ~ the plain step at this load
    assert 5 < W <= 40 and (on.rows()[0]["ttft_s"] - off.rows()[0]["ttft_s"]) / step == pytest.approx(W, rel=0.2)
    assert "delayed batching 40 iterations / 0.8 of the budget" in on.title
    assert not any("delayed batching" in x for x in off.explain()) and "delayed batching" not in off.title
