"""A `tokenomy web` process on a free loopback port, for the tests that run the real command.

The command takes a port number, not a bound socket, so the port is chosen before the process binds it and
another process of the parallel run (a live server, a Dask cluster, a Jupyter kernel) can take it in between. A
start that fails on "address already in use" is tried again on another port; any other failure is the caller's.
(Fixtures that can hand uvicorn a socket still bound, as tests/web/conftest.py's live server does, need none of
this.)"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request

TRIES = 3
START_S = 600  # a hang ends; a loaded machine never reaches it


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    """Whether ``url`` answers 200; False while nothing listens; a wrong probe (an HTTP error) fails at once."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status == 200
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{url}: HTTP {e.code}") from e
    except OSError:  # URLError included: not listening yet
        return False


def start_web(argv: list[str], probe: str = "/api/models", cwd=None) -> tuple[subprocess.Popen, int]:
    """`argv --port <free port>` started and answering 200 on `probe`; the process and its port."""
    for _ in range(TRIES):
        port = free_port()
        proc = subprocess.Popen([*argv, "--port", str(port)], cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and proc.poll() is None:
            if answers(f"http://127.0.0.1:{port}{probe}"):
                return proc, port
            time.sleep(0.2)
        if proc.poll() is None:
            stop(proc)
            raise AssertionError(f"{argv}: no answer on {probe} within {START_S} s")
        err = proc.stderr.read()
        if "address already in use" not in err.lower():
            raise AssertionError(err)
    raise AssertionError(f"{TRIES} ports in a row were taken before {argv} could bind them")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=30)
