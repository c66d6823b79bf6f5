"""The catalog is read only by catalog/ (DESIGN rule: loader.py is the library's only file I/O): no module outside it
parses TOML or reaches into the catalog's directory (issue 27 found five that did)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tokenomy"
# parsing TOML (the catalog's format, and what users' partial catalog files are written in), or a path into the
# catalog's directory; a user's own JSON (a benchmark's output, a trace) is not the catalog and may be read anywhere
READS = re.compile(r"^\s*import tomllib|loader\.ROOT|loader\.__file__|[\"']catalog[\"']\s*/")


def test_no_module_outside_the_catalog_reads_catalog_files():
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "catalog":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if READS.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
