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


def test_the_engine_names_are_the_catalogs_files():
    """No hand-kept list of engines: the answers, the web's select and the validation schema take the catalog's."""
    import pytest

    from tokenomy.answers.engines import ENGINES
    from tokenomy.catalog import loader
    from tokenomy.validation.schema import ServingCase

    assert sorted(ENGINES) == loader.engine_names() == sorted(p.stem for p in (loader.ROOT / "engines").glob("*.toml"))
    case = dict(id="x", model="llama-3.1-8b", hardware="h100-sxm", chips=1, tp=1, weight_dtype="bf16", kv_dtype="bf16",
                scenario="decode", metric="tpot_s", isl=1, osl=1, batch=1, value=1.0, published="-")
    assert ServingCase(**case, engine="sglang").engine == "sglang"
    with pytest.raises(ValueError, match="allowed: sglang, trtllm, vllm"):
        ServingCase(**case, engine="tgi")
