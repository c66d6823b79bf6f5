"""The lifecycle split from the engine (``tokenomy lifecycle --run``): each phase is the answer of the door that owns
it (train for the run's layout, serve for rollouts and inference), and the split moves the way its inputs say."""

import pytest
from cli_runner import CliRunner

import tokenomy as tk
from tokenomy.answers.variants import hardware_with
from tokenomy.cli import commands  # noqa: F401  (registers the commands)
from tokenomy.cli.app import app

RUN = "deepseek-v3"


def split(**kw) -> dict:
    return tk.lifecycle(run=RUN, **kw).payload()


@pytest.fixture(scope="module")
def base() -> dict:
    return split()


def test_pretraining_is_trains_own_answer_for_the_run(base):
    published = {r["run"]: r for r in tk.train(published=RUN).rows()}[RUN]
    assert base["pretraining_chip_hours"] == pytest.approx(published["engine_chip_hours"], rel=1e-12)
    assert base["d_pre"] == 14.8e12  # DeepSeek-V3 report: 14.8T pre-training tokens (catalog/training_runs)


def test_inference_and_rollouts_are_serves_own_throughput(base):
    """chip-hours x 3600 x serve's total tokens/s per chip gives back the tokens served (serve's other column)."""
    inf = tk.serve(RUN, "hgx-h200-8", isl=1024, osl=1024, concurrency=256).rows()[0]
    assert base["inference_chip_hours"] * 3600 * inf["total_tokens_per_s_per_chip"] == pytest.approx(base["d_inf"],
                                                                                                       rel=1e-9)
    roll = tk.serve(RUN, "hgx-h200-8", isl=1024, osl=8192, concurrency=256).rows()[0]
    assert base["rl_generation_chip_hours"] * 3600 * roll["total_tokens_per_s_per_chip"] == pytest.approx(
        base["d_rl"], rel=1e-9)
    assert base["inference_mwh"] == pytest.approx(base["inference_chip_hours"] * inf["all_in_w_per_chip"] / 1e6)


def test_rl_training_is_trains_answer_for_the_rollout_tokens(base):
    at_rl = split(pretrain_tokens=base["d_rl"])  # the same layout trained on D_RL tokens, through the same door
    assert base["rl_training_chip_hours"] == pytest.approx(at_rl["pretraining_chip_hours"], rel=1e-9)
    assert base["rl_chip_hours"] == pytest.approx(base["rl_generation_chip_hours"] + base["rl_training_chip_hours"])


def test_shares_add_up_in_each_unit(base):
    for suffix in ("", "_chip_hours", "_mwh"):
        assert sum(base[f"{s}_fraction{suffix}"] for s in ("pretraining", "rl", "inference")) == pytest.approx(1)


def test_more_inference_tokens_give_inference_a_larger_share(base):
    more = split(demand_tokens_per_s=2 * 50e6)
    assert more["d_inf"] == pytest.approx(2 * base["d_inf"])
    assert more["inference_fraction"] > base["inference_fraction"]
    assert more["pretraining_chip_hours"] == pytest.approx(base["pretraining_chip_hours"])


def test_more_pretraining_tokens_give_pretraining_a_larger_share(base):
    more = split(pretrain_tokens=2 * 14.8e12, rl_tokens_ratio=1 / 3)  # same D_RL, twice D_pre
    assert more["d_rl"] == pytest.approx(base["d_rl"])
    assert more["pretraining_fraction"] > base["pretraining_fraction"]
    assert more["inference_chip_hours"] == pytest.approx(base["inference_chip_hours"])


def test_a_faster_serving_chip_costs_fewer_inference_chip_hours(base):
    faster = split(serve_hardware=hardware_with("hgx-h200-8", "hbm_bytes_per_s=x2,bf16_flops_per_s=x2,fp8_flops_per_s=x2"))
    assert faster["inference_chip_hours"] < base["inference_chip_hours"]
    assert faster["rl_generation_chip_hours"] < base["rl_generation_chip_hours"]
    assert faster["pretraining_chip_hours"] == pytest.approx(base["pretraining_chip_hours"])


def test_longer_rollouts_at_the_same_tokens_cost_more_generation(base):
    """Decode at a longer context reads more KV per token: the same D_RL in longer rollouts takes longer."""
    longer = split(prompt_len=1024, output_len=32768)
    assert longer["rl_generation_chip_hours"] > base["rl_generation_chip_hours"]


@pytest.mark.parametrize("kw, field", [({"run": "nope"}, "run"), ({"run": "palm-540b"}, "run"),
                                       ({"serve_hardware": "zz"}, "serve_hardware"),
                                       ({"pretrain_tokens": -1}, "pretrain_tokens"),
                                       ({"inference_concurrency": 0}, "inference_concurrency"),
                                       ({"osl": "8,192"}, "osl")])
def test_bad_input_is_refused_by_name(kw, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        tk.lifecycle(**{"run": RUN, **kw})


def test_cli_refuses_in_one_line_and_explains():
    r = CliRunner().invoke(app, ["lifecycle", "--run", RUN, "--serve-hardware", "zz"])
    assert r.exit_code == 2 and r.output.strip().startswith("error: --serve-hardware:")
    assert len(r.output.strip().splitlines()) == 1
    ok = CliRunner().invoke(app, ["lifecycle", "--run", RUN, "--explain", "--json"])
    assert ok.exit_code == 0 and '"inference_fraction"' in ok.output
