"""typer's CliRunner as the ``tokenomy`` process runs a command line: only the command it names is registered while
it runs (tokenomy.cli.app.narrowed, what cli.app.main does), so each in-process call builds one click command, not
all of them (typer rebuilds every registered command on every call: ~30 ms, ~40 CPU-seconds over the suite's
in-process calls). Imported by the tests as ``from cli_runner import CliRunner`` (tests/ is on the path through its
conftest.py)."""

from __future__ import annotations

import shlex

from typer.testing import CliRunner as TyperRunner

from tokenomy.cli.app import narrowed


class CliRunner(TyperRunner):
    def invoke(self, app, args=None, *a, **kw):
        argv = shlex.split(args) if isinstance(args, str) else list(args or ())
        with narrowed(argv):
            return super().invoke(app, args, *a, **kw)
