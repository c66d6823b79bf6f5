"""No function of the library takes 10 or more parameters (issue 27; DESIGN.md convention 12): a question's inputs
travel as request objects (answers/requests.py, answers/deployment_request.py, passes.PassRequest,
econ.rl.RlRequest, core.training.Lowering, core.memory.TrainBytes, simulator.Capacity, ...), built at the door.

Counted by benchmarks/house.py (the house's size figures: ``python benchmarks/house.py --list``). Exempt, and only
these:
- the typer commands: typer reads a command's options from its signature; each hands them to an answer;
- the public doors in DOORS: their keywords are the API users type (``tk.serve(model, hw, concurrency=...)``), and
  each builds its request objects at once, so nothing below it takes the loose keywords.
"""

import importlib.util
from pathlib import Path

import tokenomy

ROOT = Path(__file__).resolve().parents[2]
DOORS = {  # path:function -> what it builds at once
    "answers/workloads.py:serve": "ServeRequest (deployment, workload, serving engine, run), or the session requests",
    "answers/layouts.py:plan": "the serving plan's ServeRequest (plan_serving), or the bare search's Deployment and "
                               "Constraints",
    "answers/sweeps.py:sweep": "the axes and the sweep's Spec (spec_of), or the session sweep's",
    "answers/training.py:train": "the TrainPlan, its training terms and Lowering (core.training.train_step), or "
                                 "train_search's TrainSearch",
}


def _house():
    spec = importlib.util.spec_from_file_location("house", ROOT / "benchmarks" / "house.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_library_function_takes_ten_or_more_parameters():
    long = dict(_house().counts()["many_params"])
    assert {k: n for k, n in long.items() if k not in DOORS} == {}


def test_every_exempt_door_is_still_a_long_public_door():
    """The allow-list stays short and true: each door exists, is exported as tk.<name>, and still needs it."""
    long = dict(_house().counts()["many_params"])
    for key in DOORS:
        assert key in long, f"{key}: no longer takes 10+ parameters; drop it from DOORS"
        assert key.rsplit(":", 1)[1] in tokenomy.__all__, key


def test_the_counter_sees_a_long_signature_and_a_command(tmp_path):
    """Every kind of parameter counts, self does not; a typer command (decorated or registered) is counted apart."""
    ten = "a, b, c, d, e, f, g, h, *args, i=1, **kw"
    (tmp_path / "lib.py").write_text(f"def long({ten}):\n    pass\n\ndef short(self, a, b):\n    pass\n\n"
                                     f"class K:\n    def method(self, {ten}):\n        pass\n")
    (tmp_path / "cmds.py").write_text(
        f"@app.command('x')\ndef x_cmd({ten}):\n    pass\n\ndef y_cmd({ten}):\n    pass\n\n"
        f"app.command('y')(y_cmd)\n\ndef helper({ten}):\n    pass\n")
    c = _house().counts(tmp_path)
    assert sorted(c["many_params"]) == [("cmds.py:helper", 11), ("lib.py:long", 11), ("lib.py:method", 11)]
    assert sorted(c["commands"]) == [("cmds.py:x_cmd", 11), ("cmds.py:y_cmd", 11)]
