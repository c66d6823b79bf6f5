"""catalog/protocols: one file per tool the validation schema names, each citing the tool's source at a commit;
every serving source of the validation catalog names its protocol."""

import tomllib
from pathlib import Path

from tokenomy.answers.engines import PROTOCOLS as DOORS
from tokenomy.catalog import loader
from tokenomy.validation.schema import PROTOCOLS

VALIDATION = Path(loader.ROOT) / "validation"


def test_one_file_per_protocol_name():
    assert set(loader.protocol_names()) == set(PROTOCOLS) == set(DOORS) and DOORS[0] == "steady"


def test_each_tool_cites_its_source_at_a_commit():
    for name in PROTOCOLS:
        f = loader.protocol_file(name)
        if name == "steady":
            assert f.load.arrivals == "steady"
            continue
        assert "/" in f.repository and f.paths and len(f.commit) == 40, name
        for part in (f.load, f.lengths, f.metrics):
            assert part.source.startswith(("https://", "MLPerf")), (name, part.source)


def test_every_serving_source_names_its_protocol():
    for path in sorted(VALIDATION.glob("*.toml")):
        data = tomllib.loads(path.read_text())
        if data.get("serving"):
            assert data["defaults"].get("protocol") in PROTOCOLS, path.name
