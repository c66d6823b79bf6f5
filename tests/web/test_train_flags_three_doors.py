"""The training options a recipe names, through the three doors: ``tokenomy train --<flag>``, ``/api/train?<field>=``
and ``tk.train(<field>=...)`` accept the same strings with the same step and refuse the same ones naming the field
(CLI: exit 2, one line; web: 422 on the API and the page; Python: a ValueError starting '<field>: ')."""

from __future__ import annotations

import json

import pytest
from cli_runner import CliRunner

import tokenomy as tk
from tokenomy.cli import app, commands  # noqa: F401  (registers every command)

BASE = {"model": "llama-3.1-8b", "hardware": "h100-sxm", "chips": "8", "seq_len": "4096", "global_batch": "64",
        "compute_dtype": "fp8", "flash_attention": "true"}
CASES = [  # field, value, accepted
    ("attention_kernel", "fa2", True), ("attention_kernel", "fa3", False), ("attention_kernel", "FA2", False),
    ("fp8_scaling", "tensorwise", True), ("fp8_scaling", "blockwise", False), ("fp8_scaling", "per-tensor", False),
    ("schedule", "dualpipe", False),  # pp 1: DualPipe needs an even pp (the layout's refusal, naming schedule)
    ("schedule", "zero-bubble", False), ("recompute", "modules", True), ("recompute", "some", False),
    ("schedule", "zb-h1", False),  # pp 1: the zero-bubble schedules reorder a pipeline's backward (naming schedule)
    ("ep_overlap", "1", True), ("ep_overlap", "1.5", False), ("virtual_stages", "0", False),
    ("moe_dispatcher", "deepep", True), ("moe_dispatcher", "nccl", False),
    # Megatron-Core's recompute_modules (core/recompute_modules.py): a comma list under recompute selective
    ("recompute_modules", "mla_up_proj,mlp", True), ("recompute_modules", "layernorm", True),
    ("recompute_modules", "mla_up", False), ("recompute_modules", "core_attn,MLP", False),
]


# on a pipeline (pp 2, 32 micro-batches a pipeline): the zero-bubble schedules of Qi et al. 2024 (core/schedules.py)
PIPELINED = {**BASE, "pp": "2"}
PIPELINED_CASES = [("schedule", "zb-h1", True), ("schedule", "zb-h2", True), ("schedule", "zb-v", True),
                   ("schedule", "ZB-V", False), ("schedule", "zb-h3", False), ("schedule", "zbv", False)]


SWITCHES = ("flash_attention", "search")


def cli(field: str, value: str, base: dict = BASE):
    args = ["train"]
    for k, v in base.items():  # the on/off options are flags without a value
        args += [f"--{k.replace('_', '-')}"] if k in SWITCHES else [f"--{k.replace('_', '-')}", v]
    r = CliRunner().invoke(app, [*args, f"--{field.replace('_', '-')}", value, "--json"])
    if r.exit_code == 0:
        return True, json.loads(r.stdout)[0]["step_s"]
    out = r.output.strip()
    assert r.exit_code == 2 and len(out.splitlines()) == 1 and f"--{field.replace('_', '-')}" in out, (field, out)
    return False, out


def web(client, field: str, value: str, base: dict = BASE):
    r = client.get("/api/train", params={**base, field: value})
    if r.status_code == 200:
        return True, r.json()[0]["step_s"]
    d = r.json()["detail"][0]
    assert r.status_code == 422 and d["loc"][-1] == field, (field, r.status_code, d)
    return False, d["msg"]


def python(field: str, value: str, base: dict = BASE):
    kw = {k: v for k, v in base.items() if k != "flash_attention"}
    try:
        res = tk.train(**kw, flash_attention=True, **{field: value})
    except ValueError as e:
        assert str(e).startswith(f"{field}: ") and "\n" not in str(e), (field, str(e))
        return False, str(e)
    return True, res.rows()[0]["step_s"]


@pytest.mark.parametrize("field,value,accepted", CASES)
def test_training_options_behave_alike_at_three_doors(client, field, value, accepted):
    doors = {"cli": cli(field, value), "web": web(client, field, value), "python": python(field, value)}
    assert {ok for ok, _ in doors.values()} == {accepted}, (field, value, doors)
    if accepted:
        steps = {name: step for name, (_, step) in doors.items()}
        assert steps["cli"] == pytest.approx(steps["web"]) == pytest.approx(steps["python"]), steps


@pytest.mark.parametrize("field,value,accepted", PIPELINED_CASES)
def test_pipeline_schedules_behave_alike_at_three_doors(client, field, value, accepted):
    doors = {"cli": cli(field, value, PIPELINED), "web": web(client, field, value, PIPELINED),
             "python": python(field, value, PIPELINED)}
    assert {ok for ok, _ in doors.values()} == {accepted}, (field, value, doors)
    if accepted:
        steps = {name: step for name, (_, step) in doors.items()}
        assert steps["cli"] == pytest.approx(steps["web"]) == pytest.approx(steps["python"]), steps


def test_the_train_page_refuses_a_bad_kernel_naming_it(client):
    r = client.get("/train", params={**BASE, "attention_kernel": "fa3"})
    assert r.status_code == 422 and 'data-field="attention_kernel"' in r.text


def test_the_train_page_offers_and_runs_the_zero_bubble_schedules(client):
    page = {**PIPELINED, "tp": "1"}
    r = client.get("/train", params={**page, "schedule": "zb-v"})
    assert r.status_code == 200 and "<option selected>zb-v</option>" in r.text
    assert all(f"<option>{s}</option>" in r.text for s in ("zb-h1", "zb-h2", "dualpipe"))
    r = client.get("/train", params={**page, "schedule": "zb-h3"})
    assert r.status_code == 422 and 'data-field="schedule"' in r.text


def test_recompute_modules_need_selective_and_move_the_step_alike_at_three_doors(client):
    # under recompute none a module list is refused naming recompute_modules; under selective, recomputing the dense
    # MLP repeats its GEMMs, so the step is longer than the default list's (core_attn) at every door
    none = {**BASE, "recompute": "none"}
    refused = {"cli": cli("recompute_modules", "mlp", none), "web": web(client, "recompute_modules", "mlp", none),
               "python": python("recompute_modules", "mlp", none)}
    assert {ok for ok, _ in refused.values()} == {False}, refused
    for door in (cli, python):
        assert door("recompute_modules", "mlp")[1] > door("recompute_modules", "core_attn")[1]
    assert web(client, "recompute_modules", "mlp")[1] > web(client, "recompute_modules", "core_attn")[1]


@pytest.mark.parametrize("field,value", [("recompute_modules", "bogus"), ("moe_dispatcher", "nccl"),
                                         ("schedule", "zb-h3"), ("recompute_modules", "mlp,MLP")])
def test_search_refuses_what_train_refuses_naming_the_field(client, field, value):
    # --search reads only some of train's options, but every value given is checked as without it (one grammar):
    # `train --search --recompute-modules bogus` had answered a search, the web refused some values and not others
    search = {**BASE, "search": "true"}
    doors = {"cli": cli(field, value, search), "web": web(client, field, value, search),
             "python": python(field, value, search)}
    assert {ok for ok, _ in doors.values()} == {False}, doors
