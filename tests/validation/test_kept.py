"""The prepared whole catalog kept between processes (validation/kept.py) is served only on the exact bytes of every
file of the package it was built from: a changed, added or removed file, code or data, is a miss. A private package
(a few files standing in for src/tokenomy) and a private cache dir."""

from __future__ import annotations

import pytest

from tokenomy.catalog import cache
from tokenomy.validation import kept as k


@pytest.fixture
def package(tmp_path, monkeypatch):
    root = tmp_path / "tokenomy"
    (root / "core").mkdir(parents=True)
    (root / "core" / "engine.py").write_text("STEP = 1\n")
    (root / "catalog.toml").write_text("x = 1\n")
    (root / "core" / "__pycache__").mkdir()
    (root / "core" / "__pycache__" / "engine.cpython-311.pyc").write_bytes(b"compiled")
    monkeypatch.setattr(cache, "PACKAGE", root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return root


def _counting():
    built = []
    return built, lambda: built.append(1) or len(built)


def test_a_second_call_is_served_and_any_change_is_a_miss(package):
    built, build = _counting()
    assert k.kept("t", build) == 1 and k.kept("t", build) == 1 and len(built) == 1  # the second from the store
    (package / "core" / "__pycache__" / "engine.cpython-311.pyc").write_bytes(b"other")  # not a source
    assert k.kept("t", build) == 1
    (package / "core" / "engine.py").write_text("STEP = 2\n")  # code
    assert k.kept("t", build) == 2
    (package / "catalog.toml").write_text("x = 2\n")  # data
    assert k.kept("t", build) == 3
    (package / "core" / "new.py").write_text("")  # a file added
    assert k.kept("t", build) == 4
    (package / "core" / "new.py").unlink()  # and removed
    assert k.kept("t", build) == 5 and k.kept("t", build) == 5


def test_the_package_bytes_are_every_file_but_compiled_ones(package):
    assert [p.relative_to(package).as_posix() for p in k.package_files()] == ["catalog.toml", "core/engine.py"]
    assert k.package_bytes() == {package / "catalog.toml": b"x = 1\n", package / "core" / "engine.py": b"STEP = 1\n"}
