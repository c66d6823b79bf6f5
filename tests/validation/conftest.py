"""What the validation tests share: the whole catalog prepared once per test process (run.prepare() lowers every
case, several CPU-seconds, which four modules paid each). Read only: a test that needs to change it prepares its own."""

from __future__ import annotations

import pytest

from tokenomy.validation import run


@pytest.fixture(scope="session")
def whole_catalog() -> run.Prepared:
    return run.prepare()
