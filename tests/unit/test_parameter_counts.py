"""No function of the library takes 10 or more parameters (issue 27; DESIGN.md convention 12): a question's inputs
travel as request objects (answers/requests.py, answers/deployment_request.py, passes.PassRequest,
session_serve.SessionRequest, econ.rl.RlRequest, simulator.Capacity, ...), built at the door.

Exempt, and only these:
- the typer commands (cli/): typer reads a command's options from its signature; each hands them to an answer;
- the public doors in DOORS: their keywords are the API users type (``tk.serve(model, hw, concurrency=...)``), and
  each builds its request objects at once, so nothing below it takes the loose keywords.
A parameter is any named argument (positional, keyword-only, *args, **kw), not self or cls.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tokenomy"
MOST = 9
DOORS = {  # path:function -> what it builds at once
    "answers/workloads.py:serve": "ServeRequest (deployment, workload, engine, run), or the session requests",
    "answers/layouts.py:plan": "the serving plan's requests (plan_serving), or the bare search's Deployment and "
                               "Constraints",
    "answers/sweeps.py:sweep": "the axes and the sweep's Spec (spec_of), or the session sweep's",
    "answers/training.py:train": "the TrainPlan and its training terms (core.training.train_step), or TrainSearch",
}


def _params(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = f.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)] + [x.arg for x in (a.vararg, a.kwarg) if x]
    return len([n for n in names if n not in ("self", "cls")])


def _commands(tree: ast.Module) -> set[str]:
    """Functions registered as typer commands: ``@app.command(...)`` or ``app.command(...)(fn)``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command" for d in node.decorator_list):
            out.add(node.name)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
                and getattr(node.func.func, "attr", "") == "command"):
            out |= {a.id for a in node.args if isinstance(a, ast.Name)}
    return out


def long_signatures(src: Path = SRC) -> dict[str, int]:
    """path:function -> parameters, for every function with more than MOST that is no typer command."""
    out = {}
    for p in sorted(src.rglob("*.py")):
        tree = ast.parse(p.read_text())
        commands = _commands(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _params(node) > MOST and not (
                    p.parts[-2] == "cli" and node.name in commands):
                out[f"{p.relative_to(src).as_posix()}:{node.name}"] = _params(node)
    return out


def test_no_library_function_takes_ten_or_more_parameters():
    long = long_signatures()
    assert {k: n for k, n in long.items() if k not in DOORS} == {}


def test_every_exempt_door_is_still_a_long_public_door():
    """The allow-list stays short and true: each door exists, is exported as tk.<name>, and still needs it."""
    import tokenomy

    long = long_signatures()
    for key in DOORS:
        assert key in long, f"{key}: no longer takes {MOST + 1}+ parameters; drop it from DOORS"
        assert key.rsplit(":", 1)[1] in tokenomy.__all__, key


def test_the_counter_sees_a_long_signature_and_a_command(tmp_path):
    """The walk counts every kind of parameter and exempts typer commands only in cli/."""
    (tmp_path / "cli").mkdir()
    ten = "a, b, c, d, e, f, g, h, *args, i=1, **kw"
    (tmp_path / "lib.py").write_text(f"def long({ten}):\n    pass\n\ndef short(self, a, b):\n    pass\n")
    (tmp_path / "cli" / "cmds.py").write_text(
        f"@app.command('x')\ndef x_cmd({ten}):\n    pass\n\ndef y_cmd({ten}):\n    pass\n\n"
        f"app.command('y')(y_cmd)\n\ndef helper({ten}):\n    pass\n")
    assert long_signatures(tmp_path) == {"lib.py:long": 11, "cli/cmds.py:helper": 11}
