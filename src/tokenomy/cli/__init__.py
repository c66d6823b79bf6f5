"""The ``tokenomy`` command line (typer + rich)."""

from tokenomy.cli.app import app, main

__all__ = ["app", "main"]
