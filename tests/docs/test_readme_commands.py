"""Every command README.md shows runs as shown and exits 0: each `$ tokenomy ...` line of its console blocks
through the real entry point, each python block in a fresh interpreter, and `tokenomy web` until it answers."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

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
def test_command_runs(command):
    r = subprocess.run([sys.executable, "-c", ENTRY, *shlex.split(command)[1:]], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, f"{command}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


@pytest.mark.parametrize("code", blocks("python"))
def test_python_block_runs(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_web_command_serves_the_page():
    """`tokenomy web` as shown, on a free port (the shown default, 8000, may be taken on a shared machine)."""
    shown = next(c for c in COMMANDS if shlex.split(c)[1] == "web")
    port = _free_port()
    p = subprocess.Popen([sys.executable, "-c", ENTRY, *shlex.split(shown)[1:], "--port", str(port)], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline, status = time.monotonic() + 600, None  # a hang ends; a loaded machine never reaches it
        while time.monotonic() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                    status = resp.status
                    break
            except OSError:
                time.sleep(0.5)
        assert status == 200, p.stderr.read() if p.poll() is not None else "no answer"
    finally:
        p.terminate()
        p.wait(timeout=30)
