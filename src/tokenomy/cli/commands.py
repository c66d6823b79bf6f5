"""Importing this module registers every CLI command. Add one import per command module."""

from tokenomy.cli import foundation  # noqa: F401
