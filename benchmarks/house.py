"""The house's size figures (issue 27): files over 300 lines and functions with >= 10 parameters in src/tokenomy.

    python benchmarks/house.py [--list] [SRC]   (SRC: another checkout's src/tokenomy, to compare)
A parameter is any named argument (positional, keyword-only, *args, **kw), not self/cls. CLI commands (functions
registered with ``@app.command(...)`` or ``app.command(...)(fn)``: typer reads their options from the signature)
are counted apart: they may keep their options but must build the request objects at once.
tests/unit/test_parameter_counts.py holds the library to no function with >= 10 parameters but its public doors.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tokenomy"
LONG_FILE = 300
MANY_PARAMS = 10


def _params(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = f.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)] + [x.arg for x in (a.vararg, a.kwarg) if x]
    return len([n for n in names if n not in ("self", "cls")])


def _commands(tree: ast.Module) -> set[str]:
    """The functions a module registers as typer commands: ``@app.command(...)`` or ``app.command(...)(fn)``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command" for d in node.decorator_list):
            out.add(node.name)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
                and getattr(node.func.func, "attr", "") == "command"):
            out |= {a.id for a in node.args if isinstance(a, ast.Name)}
    return out


def counts(src: Path = SRC) -> dict:
    """{"long_files": [(path, lines)], "many_params": [(path:function, n)], "commands": [(path:function, n)]}."""
    out = {"long_files": [], "many_params": [], "commands": []}
    for p in sorted(src.rglob("*.py")):
        text = p.read_text()
        rel = p.relative_to(src).as_posix()
        n_lines = text.count("\n")
        if n_lines > LONG_FILE:
            out["long_files"].append((rel, n_lines))
        tree = ast.parse(text)
        commands = _commands(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _params(node) >= MANY_PARAMS:
                key = "commands" if node.name in commands else "many_params"
                out[key].append((f"{rel}:{node.name}", _params(node)))
    return out


def main(argv: list[str]) -> None:
    paths = [a for a in argv if not a.startswith("--")]
    c = counts(Path(paths[0]) if paths else SRC)
    print(f"files over {LONG_FILE} lines: {len(c['long_files'])}; library functions with >= {MANY_PARAMS} "
          f"parameters: {len(c['many_params'])}; CLI commands with >= {MANY_PARAMS} options: {len(c['commands'])}")
    if "--list" in argv:
        for key in c:
            for name, n in sorted(c[key], key=lambda x: -x[1]):
                print(f"  {key:11s} {n:4d}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
