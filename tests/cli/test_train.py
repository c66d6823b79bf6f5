"""tokenomy train / lifecycle / rl through typer's CliRunner: JSON/CSV/explain, does-not-fit, bad input."""

import json

import pytest
from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401  (registers every command)
from tokenomy.answers import life as lifecycle_answer
from tokenomy.answers import training as answers
from tokenomy.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


TRAIN = ("train", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--chips", "1024", "--tp", "8", "--pp", "4",
         "--seq-len", "4096", "--global-batch", "512,1024", "--recompute", "full", "--tokens", "15e12")


def test_train_json_rows():
    r = run(*TRAIN, "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [x["global_batch"] for x in rows] == [512, 1024]
    keys = {"flops_per_token", "compute_s", "bubble_fraction", "tp_s", "dp_s", "pp_s", "comm_exposed_s", "step_s",
            "mfu", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "fits", "chip_hours",
            "usd", "days"}
    assert keys <= set(rows[0])
    for x in rows:
        assert x["fits"] and x["dp"] == 32 and x["step_s"] >= x["compute_s"]
        assert x["usd"] == pytest.approx(x["chip_hours"] * 2.69)
    assert rows[1]["bubble_fraction"] < rows[0]["bubble_fraction"]  # more micro-batches, smaller bubble


def test_train_csv_table_and_explain():
    lines = run(*TRAIN, "--csv").stdout.strip().splitlines()
    assert lines[0].startswith("global_batch,chips,dp") and len(lines) == 3
    e = run(*TRAIN, "--explain").stdout
    assert "FLOPs/token = 6*N_active + attention" in e and "bubble = (p-1)/(v*m + p-1)" in e and "chip-hours" in e
    assert "train: llama-3.1-70b on 1024 x h100-sxm" in run(*TRAIN).stdout


def test_zero_bubble_schedules_on_the_cli():
    # --schedule zb-h1 / zb-h2 / zb-v (core/schedules.py, Qi et al. 2024): the bubble below 1F1B's, ZB-H2 holding more
    # activations than 1F1B and ZB-H1; the derivation names ZB-H1's idle time
    rows = {s: json.loads(run(*TRAIN, "--schedule", s, "--json").stdout)[0] for s in ("1f1b", "zb-h1", "zb-h2", "zb-v")}
    assert rows["zb-h2"]["bubble_fraction"] < rows["zb-h1"]["bubble_fraction"] < rows["1f1b"]["bubble_fraction"]
    assert rows["zb-h1"]["step_s"] < rows["1f1b"]["step_s"]
    assert rows["zb-v"]["bubble_fraction"] == pytest.approx(rows["zb-h2"]["bubble_fraction"])  # taken at ZB-H2's
    assert rows["zb-h2"]["activations_bytes"] > rows["zb-h1"]["activations_bytes"] == rows["1f1b"]["activations_bytes"]
    assert "min(m-1, p-1)*T_W" in run(*TRAIN, "--schedule", "zb-h1", "--explain").stdout
    r = run(*TRAIN[:-8], "--pp", "1", "--seq-len", "4096", "--global-batch", "512", "--schedule", "zb-v")
    assert r.exit_code == 2 and "--schedule" in r.output and "pp > 1" in r.output


def test_a_plan_that_does_not_fit_says_which_term():
    args = ("train", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--chips", "8", "--global-batch", "8",
            "--recompute", "none")
    row = json.loads(run(*args, "--json").stdout)[0]
    assert row["fits"] is False and row["step_s"] is None and row["mfu"] is None
    assert row["why"].startswith("does not fit: activations is the largest term")
    text = run(*args).stdout
    assert "does not fit" in text and "activations" in text


def test_given_mfu_and_published_runs():
    rows = json.loads(run(*TRAIN, "--mfu", "0.4", "--json").stdout)
    assert all(x["mfu"] == pytest.approx(0.4) and x["mfu_given"] for x in rows)
    pub = json.loads(run("train", "--published", "all", "--json").stdout)
    assert {p["run"] for p in pub} == {"llama-3.1-405b", "deepseek-v3", "palm-540b"}
    assert abs([p for p in pub if p["run"] == "llama-3.1-405b"][0]["error_fraction"]) < 0.10


def test_lifecycle_forward_and_inverse():
    d = json.loads(run("lifecycle", "--demand-tokens-per-s", "5e7", "--target-params", "1e12", "--json").stdout)
    assert d["pretraining_fraction"] + d["rl_fraction"] + d["inference_fraction"] == pytest.approx(1)
    assert d["overtraining"] > 1 and d["d_inf"] == pytest.approx(5e7 * 60 * 86400)
    inv = json.loads(run("lifecycle", "--infer", "--demand-tokens-per-s", "5e8", "--models-per-family", "10",
                         "--json").stdout)
    assert inv["overtraining"] == pytest.approx(129.6) and inv["ratio_pre_rl_inf"] == pytest.approx([1, 2 / 3, 1])
    assert "over-training = D_pre/D_Chinchilla = 129.6x" in run("lifecycle", "--infer", "--explain").stdout
    assert run("lifecycle", "--csv").stdout.startswith("target_loss,n_active_params")


def test_rl_json():
    rows = json.loads(run("rl", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--batch", "8,64",
                          "--json").stdout)
    assert len(rows) == 2 and rows[1]["rollout_s"] < rows[0]["rollout_s"] and rows[0]["efficiency_penalty"] > 1


@pytest.mark.parametrize("args,needle", [
    (("train", "--model", "llama-3.1-70b", "--schedule", "zigzag"), "--schedule"),
    (("train", "--model", "llama-3.1-70b", "--recompute", "some"), "--recompute"),
    (("train", "--model", "llama-3.1-70b", "--tp", "3", "--chips", "3", "--global-batch", "8"), "--tp: 3 does not divide"),
    (("train", "--model", "llama-3.1-70b", "--chips", "10", "--tp", "4"), "--chips"),
    (("train", "--model", "llama-3.1-70b", "--mfu", "1.5"), "--mfu"),
    (("train", "--model", "llama-3.1-70b", "--global-batch", "abc"), "--global-batch"),
    (("train", "--model", "nope-1b"), "unknown model"),
    (("train", "--model", "llama-3.1-8b", "--ep-overlap", "2"), "--ep-overlap"),
    (("train", "--model", "llama-3.1-405b", "--chips", "16384", "--tp", "8", "--pp", "16", "--mfu", "0.40"),
     "--mfu: 0.40 is above this layout's cap 0.26 (pipeline bubble 65%"),
    (("train",), "--model"),
    (("train", "--published", "gpt-5"), "--published"),
    (("lifecycle", "--target-loss", "1.5"), "--target-loss"),
    (("lifecycle", "--period-days", "-1"), "--period-days"),
    (("lifecycle", "--rl-flops-factor", "9"), "--rl-flops-factor"),
    (("rl", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--flops-factor", "1"), "--flops-factor"),
])
def test_bad_input_is_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in r.output


@pytest.mark.parametrize("args,answer,kw", [
    (TRAIN[1:] + ("--mfu", "0.4"), answers.train,
     dict(model="llama-3.1-70b", hardware="h100-sxm", chips=1024, tp=8, pp=4, seq_len=4096, global_batch=[512, 1024],
          recompute="full", tokens=15e12, mfu=0.4)),
    (("--published", "all"), answers.train, dict(published="all")),
    (("--model", "deepseek-v3", "--chips", "2048", "--pp", "16", "--ep", "64", "--global-batch", "7680",
      "--ep-overlap", "1", "--recompute", "full", "--attention", "full"), answers.train,
     dict(model="deepseek-v3", chips=2048, pp=16, ep=64, global_batch=7680, ep_overlap=1.0, recompute="full",
          attention="full")),
])
def test_train_answer_payload_is_the_cli_json(args, answer, kw):
    r = run("train", *args, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == json.loads(json.dumps(answer(**kw).payload()))


def test_rl_and_lifecycle_answers_are_the_cli_json():
    r = run("rl", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--batch", "8,64", "--json")
    res = answers.rl(model="llama-3.1-8b", hardware="hgx-h100-8", batch=[8, 64])
    assert json.loads(r.stdout) == res.payload() and list(res.to_pandas()["batch"]) == [8, 64]
    life = lifecycle_answer.lifecycle(demand_tokens_per_s=5e7, target_params=1e12)
    assert json.loads(run("lifecycle", "--demand-tokens-per-s", "5e7", "--target-params", "1e12", "--json").stdout) \
        == life.payload()
    assert isinstance(life.payload(), dict) and "C_pre = 6*N*D_pre" in "\n".join(life.explain())
    inv = lifecycle_answer.lifecycle(infer=True, demand_tokens_per_s=5e8, models_per_family=10)
    assert json.loads(run("lifecycle", "--infer", "--demand-tokens-per-s", "5e8", "--models-per-family", "10",
                          "--json").stdout) == inv.payload()


def test_answers_name_the_python_field_and_accept_objects():
    from tokenomy.catalog.loader import hardware, model

    with pytest.raises(ValueError, match=r"^schedule: 'zigzag'"):
        answers.train(model="llama-3.1-8b", schedule="zigzag")
    with pytest.raises(ValueError, match=r"^mfu: 0.95 is above this layout's cap"):
        answers.train(model="llama-3.1-8b", chips=8, global_batch=64, recompute="full", mfu=0.95)
    res = answers.train(model=model("llama-3.1-8b"), hardware=hardware("h100-sxm"), chips=8, global_batch=64)
    assert res.rows()[0]["chips"] == 8 and res.explain()[0].startswith("[bold]llama-3.1-8b")
