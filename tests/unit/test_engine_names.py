"""One meaning of ``engine`` inside the library (issue 27; docs/notation.md): ``engine`` alone is the pass engine
(core/engine.py, imported as ``engine``); the serving engine (vLLM, SGLang, TensorRT-LLM) is ``serving_engine``
(its name), an ``EngineProfile`` (serving/scheduler.py) or an ``EngineRequest`` (answers/requests.py).

The users' word stays where users type or read it: the doors' ``engine=`` keyword and the CLI's ``--engine``
(backward compatible), the JSON/CSV ``engine`` column, and the ``engine`` field of the catalog's files (the
schemas below, and a user's benchmark setup, which mirrors a validation case's fields).
"""

import ast
import inspect
from pathlib import Path

import tokenomy as tk

SRC = Path(__file__).resolve().parents[2] / "src" / "tokenomy"
DOORS = ("serve", "plan", "sweep")  # tk.<door>(engine=...): a keyword of their tables (SERVE_KEYWORDS, ...)
INTERFACE = {  # path:function or path:class -> why the users' word stays
    "answers/launch.py:launch_commands": "launch_commands(engine=...) (docs/deploy.md)",
    "validation/against.py:Setup": "a user's benchmark setup: the validation case's fields (--engine)",
}
FILE_FORMATS = ("catalog/schema/", "validation/schema.py", "validation/terms_schema.py")  # the TOML files' own field names


def _commands(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command" for d in node.decorator_list):
            out.add(node.name)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and getattr(
                node.func.func, "attr", "") == "command":
            out |= {a.id for a in node.args if isinstance(a, ast.Name)}
    return out


def named_engine(src: Path = SRC) -> set[str]:
    """path:function for each parameter called ``engine``, path:class for each class field called ``engine``,
    outside the CLI's commands and the catalog's file formats."""
    out = set()
    for p in sorted(src.rglob("*.py")):
        rel = p.relative_to(src).as_posix()
        if rel.startswith(FILE_FORMATS):
            continue
        tree = ast.parse(p.read_text())
        commands = _commands(tree) if rel.startswith("cli/") else set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in commands:
                a = node.args
                if "engine" in [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]:
                    out.add(f"{rel}:{node.name}")
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.AnnAssign) and getattr(b.target, "id", "") == "engine" for b in node.body):
                out.add(f"{rel}:{node.name}")
    return out


def test_engine_alone_is_the_pass_engine_below_the_interface():
    assert named_engine() - set(INTERFACE) == set()


def test_every_interface_name_is_still_there():
    assert set(INTERFACE) <= named_engine()
    for name in DOORS:  # the doors take it from their keyword tables: their public signatures still offer it
        assert "engine" in inspect.signature(getattr(tk, name)).parameters, name


def test_the_check_finds_a_parameter_and_a_field(tmp_path):
    (tmp_path / "a.py").write_text("def f(dep, engine):\n    pass\n\nclass R:\n    engine: str\n\n"
                                   "def g(serving_engine):\n    pass\n")
    assert named_engine(tmp_path) == {"a.py:f", "a.py:R"}
