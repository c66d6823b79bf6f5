"""--flops-fraction / --hbm-fraction / --overhead-s build a custom set by name (the set is keyword-only: a new term
once shifted them, the HBM share landing in another field)."""

import json

import pytest
from cli_runner import CliRunner

from tokenomy.cli.app import app
from tokenomy.cli.foundation import efficiency_option
from tokenomy.core.efficiency import Efficiency

RUN = CliRunner()
BASE = ["decode", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--batch", "8", "--json"]


def test_each_option_lands_in_its_field():
    e = efficiency_option("calibrated", 0.5, 0.8, 1e-3)
    assert (e.flops_fraction, e.hbm_fraction, e.overhead_s, e.name) == (0.5, 0.8, 1e-3, "custom")
    assert e.kv_fraction == 0.8 and e.narrow_flops_ratio == 1.0


def test_positional_terms_are_refused():
    with pytest.raises(TypeError):
        Efficiency(0.5, 0.8)  # noqa


def test_the_cli_runs_a_custom_set_and_an_overhead_adds_to_the_step():
    a = RUN.invoke(app, BASE + ["--flops-fraction", "0.5"])
    b = RUN.invoke(app, BASE + ["--flops-fraction", "0.5", "--overhead-s", "0.001"])
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    sa, sb = json.loads(a.output)[0]["step_s"], json.loads(b.output)[0]["step_s"]
    assert sb == pytest.approx(sa + 0.001, rel=1e-9)
