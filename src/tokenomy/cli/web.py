"""``tokenomy web``: the local web page. fastapi and uvicorn are imported inside the command only.

Workers: uvicorn's process supervisor runs ``workers`` copies of the app on one socket (default: one per core),
each built in its own process by ``create_app(allowed_hosts)`` (a picklable factory, so the host names travel
with it; nothing is read from the environment).
"""

from __future__ import annotations

import errno
import functools
import os
import socket

import typer

from tokenomy.answers.input_bounds import FIELDS
from tokenomy.cli.app import UsageError, app, guarded

WILDCARDS = ("0.0.0.0", "::", "")
MAX_WORKERS = int(FIELDS["workers"].hi)  # --workers' bound (answers/input_bounds.FIELDS)


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return min(MAX_WORKERS, max(1, len(os.sched_getaffinity(0))))
    except AttributeError:  # not on Linux
        return min(MAX_WORKERS, max(1, os.cpu_count() or 1))


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything is printed: a port in use or a host this machine does not have
    is one line naming the option (exit 2), not a banner followed by uvicorn's exit 3."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a socket in TIME_WAIT is reused
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        which = "--port" if e.errno == errno.EADDRINUSE else "--host"
        raise UsageError(f"{which}: cannot listen on {host}:{port} ({e.strerror or e})") from None
    sock.set_inheritable(True)  # the workers of uvicorn's supervisor accept on it
    return sock


def serve(host: str, port: int, workers: int, allowed_hosts: tuple[str, ...]) -> None:
    """uvicorn on ``host:port`` with ``workers`` processes of the app; the banner once the socket is bound."""
    sock = listening_socket(host, port)
    typer.echo(f"tokenomy web: http://{host}:{port}/  ({workers} worker{'s' * (workers > 1)}; Ctrl-C to stop)",
               err=True)
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from tokenomy.web.app import create_app

    factory = functools.partial(create_app, allowed_hosts=allowed_hosts)
    config = uvicorn.Config(factory, factory=True, host=host, port=port, workers=workers, log_level="warning")
    if workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
    else:  # what uvicorn.run does for workers > 1, with a factory object instead of an import string
        Multiprocess(config, sockets=[sock]).run()


@app.command("web")
@guarded
def web_cmd(port: int = typer.Option(8000, "--port", help="TCP port to listen on."),
            host: str = typer.Option("127.0.0.1", "--host",
                                     help="Interface to bind; give it explicitly (e.g. 0.0.0.0) to listen beyond "
                                          "this machine."),
            workers: int = typer.Option(None, "--workers", help="Server processes; default: one per core."),
            allow_host: list[str] = typer.Option([], "--allow-host",
                                                 help="A Host name the page answers besides localhost, 127.0.0.1 "
                                                      "and --host (repeatable), e.g. the machine's DNS name.")) -> None:
    """Serve the pages (Serve, Catalog, ...) and the JSON API on http://127.0.0.1:8000 (offline).

    Example: tokenomy web --port 8080
    """
    n = default_workers() if workers is None else workers  # --port and --workers: bounded by their rows of FIELDS
    bad = [h for h in allow_host if not h.strip() or any(c in h for c in "/ \\:@")]
    if bad:
        raise UsageError(f"--allow-host: {bad[0]!r} is not a host name (e.g. myhost.example.org or 10.0.0.5)")
    try:
        import uvicorn  # noqa: F401

        import tokenomy.web.app  # noqa: F401
    except ImportError as e:
        raise UsageError(f"the web extra is not installed ({e.name}); pip install 'tokenomy[web]'") from None
    hosts = tuple(dict.fromkeys([*(() if host in WILDCARDS else (host,)), *allow_host]))
    if host in WILDCARDS:
        typer.echo(f"tokenomy web: warning: --host {host or '(empty)'} binds every network interface: anyone who can "
                   "reach this machine can use the page; it answers only the Host names localhost, 127.0.0.1"
                   f"{''.join(', ' + h for h in hosts)} (add yours with --allow-host NAME)", err=True)
    serve(host, port, n, hosts)
