"""``tokenomy web``: the local web page. fastapi and uvicorn are imported inside the command only."""

from __future__ import annotations

import typer

from tokenomy.cli.app import UsageError, app, guarded


@app.command("web")
@guarded
def web_cmd(port: int = typer.Option(8000, "--port", help="TCP port to listen on."),
            host: str = typer.Option("127.0.0.1", "--host",
                                     help="Interface to bind; give it explicitly (e.g. 0.0.0.0) to listen beyond "
                                          "this machine.")) -> None:
    """Serve the pages (Serve, Catalog, ...) and the JSON API on http://127.0.0.1:8000 (offline).

    Example: tokenomy web --port 8080
    """
    if not 0 < port < 65536:
        raise UsageError(f"--port must be in 1..65535, got {port}")
    try:
        import uvicorn

        from tokenomy.web.app import create_app
    except ImportError as e:
        raise UsageError(f"the web extra is not installed ({e.name}); pip install 'tokenomy[web]'") from None
    typer.echo(f"tokenomy web: http://{host}:{port}/  (Ctrl-C to stop)", err=True)
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")
