"""No function of the library takes 10 or more parameters (issue 27; DESIGN.md convention 12): a question's inputs
travel as request objects (answers/requests.py, answers/deployment_request.py, passes.PassRequest,
econ.rl.RlRequest, core.training.Lowering, core.memory.TrainBytes, simulator.Capacity, ...), built at the door.
The public doors name a few keywords and take the rest in ``**kw`` from a keyword table with the defaults
(``@door(KEYWORDS)``: workloads.SERVE_KEYWORDS, layouts.PLAN_KEYWORDS, training.TRAIN_KEYWORDS, sweeps' AXES and
SETTINGS), so ``help(tk.serve)`` still lists every keyword (the door's signature) while no function has them loose.

Counted by benchmarks/house.py (the house's size figures: ``python benchmarks/house.py --list``). Exempt, and only
these: the typer commands (typer reads a command's options from its signature; each hands them to an answer).
"""

import importlib.util
import inspect
from pathlib import Path

import pytest

import tokenomy as tk

ROOT = Path(__file__).resolve().parents[2]
DOORS = {"serve": 46, "plan": 31, "train": 40, "sweep": 35}  # named parameters, model and hardware included


def _house():
    spec = importlib.util.spec_from_file_location("house", ROOT / "benchmarks" / "house.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_library_function_takes_ten_or_more_parameters():
    assert dict(_house().counts()["many_params"]) == {}


@pytest.mark.parametrize("name", sorted(DOORS))
def test_the_doors_still_list_every_keyword(name):
    """The keyword tables reach the public signature: help(tk.<door>) and the web's /api/<door> still offer every
    keyword they took as loose parameters (the counts of the signatures they replaced)."""
    params = inspect.signature(getattr(tk, name)).parameters.values()
    assert sum(p.kind is not p.VAR_KEYWORD for p in params) == DOORS[name]


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
