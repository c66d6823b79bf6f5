"""The three doors of one question, driven alike: ``tokenomy <cmd> --opt TEXT``, ``/api/<cmd>?opt=TEXT`` and the
answer's public function (what ``tk.<cmd>`` is) with ``opt=TEXT``. Each returns (accepted, rows or message) and
asserts its own refusal contract: the CLI exit 2 with one line naming ``--opt``; the web 422 with the field as
``loc``; Python a ValueError whose first line names ``opt``. Which options the CLI and the web share comes from
their registries (typer's commands, web/params.options), never from a hand list."""

from __future__ import annotations

import typer.main
from cli_runner import CliRunner

from tokenomy import answers
from tokenomy.cli import app, commands  # noqa: F401  (registers every command)
from tokenomy.web import params as P

MODEL, HW = "llama-3.2-1b", "h100-sxm"
BASES = {  # what each shared question needs to answer at all: the small model on one chip (the options are derived)
    "decode": {"model": MODEL, "hardware": HW, "batch": "1", "context": "1024"},
    "prefill": {"model": MODEL, "hardware": HW, "batch": "1", "context": "1024"},
    "plan": {"model": MODEL, "hardware": HW, "chips": "1"},
    "batch": {"model": MODEL, "hardware": HW, "batch": "1,8"}, "latency": {"model": MODEL, "hardware": HW},
    "context": {"model": MODEL, "hardware": HW}, "pricing": {"model": MODEL, "hardware": HW},
    "speculate": {"model": MODEL, "hardware": HW}, "cache": {"model": MODEL, "hardware": HW},
    "serve": {"model": MODEL, "hardware": HW, "concurrency": "8"},
    "train": {"model": MODEL, "hardware": HW}, "rl": {"model": MODEL, "hardware": HW},
    "lifecycle": {}, "min_chips": {"model": MODEL, "hardware": HW, "use_case": "chat"}, "lecture": {},
}


def cli_command(command: str):
    return typer.main.get_command(app).commands.get(command.replace("_", "-"))


def shared_options() -> dict[str, dict[str, P.Option]]:
    """question -> {option: the web's Option} for every option both ``/api/<q>`` and ``tokenomy <q>`` take."""
    out = {}
    for q in answers.SERVED:
        cmd = cli_command(q)
        if cmd is None:
            continue
        flags = {o[2:].replace("-", "_") for p in cmd.params for o in p.opts if o.startswith("--")}
        out[q] = {n: o for n, o in P.options(q).items() if n in flags}
    return out


def _cli_args(command: str, params: dict) -> list[str]:
    args = [command.replace("_", "-")]
    for k, v in params.items():
        args += [f"--{k.replace('_', '-')}", v]
    return args + ["--json"]


def cli(command: str, params: dict, field: str) -> tuple[bool, object]:
    r = CliRunner().invoke(app, _cli_args(command, params))
    out = r.output.strip()
    if r.exit_code == 0:
        return True, out
    assert r.exit_code == 2 and len(out.splitlines()) == 1 and out.startswith("error: "), (command, params, out)
    return False, out


def web(client, command: str, params: dict, field: str) -> tuple[bool, object]:
    r = client.get(f"/api/{command}", params=params)
    if r.status_code == 200:
        return True, r.json()
    assert r.status_code == 422, (command, params, r.status_code, r.text[:300])
    d = r.json()["detail"][0]
    return False, {"loc": d["loc"][-1], "msg": d["msg"]}


def python(command: str, params: dict, field: str) -> tuple[bool, object]:
    params = dict(params)
    if command == "serve" and (pools := {k: params.pop(k) for k in P.POOL_FIELDS if k in params}):
        params = {**params, "pools": pools}  # tk.serve takes a disaggregated deployment's pools as one dict
    try:
        res = P.answer_fn(command)(**params)
        return True, res.rows()
    except ValueError as e:
        assert "\n" not in str(e).strip(), (command, params, str(e))
        return False, str(e)


def names_field(door: str, out, field: str) -> bool:
    """Whether a refusal names ``field`` as that door words it."""
    if door == "cli":
        return f"error: --{field.replace('_', '-')}:" in out
    if door == "web":
        return out["loc"] == field
    return out.startswith(f"{field}: ")
