"""Importing this module registers every CLI command. Add one import per command module."""

from tokenomy.cli import foundation  # noqa: F401
from tokenomy.cli import web  # noqa: F401
from tokenomy.cli import parallel  # noqa: F401
from tokenomy.cli import training, lifecycle  # noqa: F401
from tokenomy.cli import serving, serving_econ  # noqa: F401
from tokenomy.cli import fidelity  # noqa: F401
from tokenomy.cli import reversible  # noqa: F401,E402
from tokenomy.cli import serve  # noqa: F401
from tokenomy.cli import sweep  # noqa: F401
from tokenomy.cli import sizing  # noqa: F401
