"""Every command README.md shows runs as shown and exits 0: each `$ tokenomy ...` line of its console blocks
through the real entry point (tokenomy.cli.main, in this process: the start of a `tokenomy` process is
test_web_command_serves_the_page's, which runs the same entry point in one, and tests/cli/test_serving.py's
test_entry_point_subprocess), each python block in a fresh interpreter, and `tokenomy web` until it answers."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from web_process import start_web, stop

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
ENTRY = "import sys; from tokenomy.cli import main; sys.argv[0] = 'tokenomy'; main()"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


COMMANDS = [line[2:].strip() for b in blocks("console") for line in b.splitlines() if line.startswith("$ tokenomy")]
CLI = [c for c in COMMANDS if shlex.split(c)[1] != "web"]


def test_the_readme_shows_commands():
    assert len(CLI) >= 6 and any(shlex.split(c)[1] == "web" for c in COMMANDS)
    assert blocks("python")


@pytest.mark.parametrize("command", CLI)
def test_command_runs(command, monkeypatch, capsys):
    """As ENTRY runs it, without a process's start: ~0.5 CPU-s of imports each, and the catalog read again (measured
    under load: the twelve commands 30 CPU-s in processes, 23 in one; `validate` 9.4 -> 2.2)."""
    from tokenomy.cli import main

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", ["tokenomy", *shlex.split(command)[1:]])
    with pytest.raises(SystemExit) as e:
        main()
    out = capsys.readouterr()
    assert e.value.code in (0, None), f"{command}\n{out.out[-2000:]}\n{out.err[-2000:]}"
    assert out.out.strip(), command  # it answered


@pytest.mark.parametrize("code", blocks("python"))
def test_python_block_runs(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_web_command_serves_the_page():
    """`tokenomy web` as shown, on a free port (the shown default, 8000, may be taken on a shared machine)."""
    shown = next(c for c in COMMANDS if shlex.split(c)[1] == "web")
    proc, _ = start_web([sys.executable, "-c", ENTRY, *shlex.split(shown)[1:]], probe="/", cwd=ROOT)
    stop(proc)
