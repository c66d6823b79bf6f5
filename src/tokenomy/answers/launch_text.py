"""How a launch block is written: flags in their documented formats, YAML config files, paste-ready shell text.

    render      a setting's flag and value as argv words (a store-true flag alone; JSON compact; a $PLACEHOLDER as is)
    split       settings -> argv words for the flags and a nested dict for the YAML keys (catalog/engines/flags)
    shell_text  the block's shell: a header comment, the placeholders assigned, the YAML heredoc, the command with one
                flag and its value per line
"""

from __future__ import annotations

import json
import shlex


def render(flag, value) -> list[str]:
    """A flag and its value as argv words in the flag's documented format (a store-true flag: its name alone)."""
    fmt = flag.format
    if isinstance(value, str) and value.startswith("$"):  # a placeholder the block's first line assigns
        return [flag.name, value]
    if fmt == "flag":
        return [flag.name] if value else []
    if fmt == "choice" and str(value) not in flag.choices:
        raise ValueError(f"emit: {value!r} is not among {flag.name}'s values ({', '.join(flag.choices)})")
    text = {"int": lambda v: str(int(v)), "fraction": lambda v: f"{float(v):g}",
            "json": lambda v: json.dumps(v, separators=(",", ":"))}.get(fmt, str)(value)
    return [flag.name, text]


def split(table, values: dict, yaml_only: bool = False) -> tuple[list[str], dict]:
    """Settings -> (argv words for flags, nested config dict for YAML keys); a setting with both goes to the flag
    unless ``yaml_only`` (a worker whose settings all live in its config file)."""
    argv, config = [], {}
    for name, v in values.items():
        f = table.flags[name]
        if f.name and not yaml_only:
            argv += render(f, v)
        elif f.key:
            render(f, v)  # checks a choice's value
            put(config, f.key, v)
        else:
            raise ValueError(f"emit: {table.engine} {table.version} has no config key for {name}")
    return argv, config


def put(config: dict, key: str, value) -> None:
    """config["a"]["b"] = value for the dotted key "a.b" (a YAML file's nesting)."""
    *path, last = key.split(".")
    for p in path:
        config = config.setdefault(p, {})
    config[last] = value


def shell_text(head: str, place: dict, argv: list[str], config: dict | None, cfg_file: str | None) -> str:
    """Paste-ready shell: the header, the placeholders assigned, the config file written, the command."""
    lines = [head]
    if place:
        lines.append(" ".join(f"{k}={v}" for k, v in place.items()) + "  # placeholders: set to this server's")
    if config:
        lines += [f"cat > {cfg_file} <<EOF", yaml(config).rstrip(), "EOF"]
    words = [w if w.startswith("$") or w.startswith("http://$") else shlex.quote(w) for w in argv]
    first = next((i for i, w in enumerate(words) if w.startswith("--") or w == "-c"), len(words))  # launch, model
    lines.append(" \\\n    ".join([" ".join(words[:first])] + _pairs(words[first:])))
    return "\n".join(lines)


def _pairs(words: list[str]) -> list[str]:
    """The command's words grouped a flag with its value per line."""
    out: list[str] = []
    for w in words:
        if out and not w.startswith("-") and out[-1].startswith("-") and " " not in out[-1]:
            out[-1] += " " + w
        else:
            out.append(w)
    return out


def yaml(d: dict, indent: int = 0) -> str:
    """A nested dict of scalars and lists as block YAML (strings JSON-quoted, which YAML reads as the same)."""
    out = []
    for k, v in d.items():
        pad = " " * indent
        if isinstance(v, dict):
            out.append(f"{pad}{k}:\n{yaml(v, indent + 2).rstrip()}")
        elif isinstance(v, bool):
            out.append(f"{pad}{k}: {'true' if v else 'false'}")
        elif isinstance(v, (list, str)):
            out.append(f"{pad}{k}: {json.dumps(v)}")
        else:
            out.append(f"{pad}{k}: {v}")
    return "\n".join(out) + "\n"
