"""A user's calibrated efficiency terms: the file `tokenomy calibrate --from` writes and `--efficiency FILE.toml`
reads back into decode, serve and validate. Never written into the package catalog.

The file is the catalog's efficiency-file schema (terms_schema.EfficiencyFile: chip, source, fitted, split rule, every
term, the cases fitted on, the in-sample error) plus what a user fit must say about itself: which terms it
refitted (the rest are the catalog's for the chip), the benchmark file, the held-out error before and after, and
the range of the points outside which the refitted terms are untested. It is written whole or not at all (a
temporary file beside it, renamed into place).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from tokenomy.catalog import loader
from tokenomy.core.efficiency import Efficiency
from tokenomy.validation.load import _as_efficiency
from tokenomy.validation.terms_schema import EfficiencyFile

SOURCE = "fitted: tokenomy calibrate --from (the user's benchmark file named in from_file)"


class UserEfficiencyFile(EfficiencyFile):
    source: str = SOURCE
    refitted: list[str]  # the terms this fit moved; the others are the catalog's for the chip
    from_file: str  # the benchmark file the points came from
    held_out_before: dict[str, float]  # median |error| by metric on the held-out points, catalog terms
    held_out_after: dict[str, float]  # the same with these terms
    valid_range: str  # the points' loads and lengths: outside them the refitted terms are untested


def _toml_value(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(float(v)) if isinstance(v, float) else repr(v)


def to_toml(f: UserEfficiencyFile) -> str:
    data = f.model_dump()
    tables = {k: data.pop(k) for k in ("terms", "in_sample", "held_out_before", "held_out_after")}
    lines = ["# Efficiency terms calibrated on a user's benchmark file (tokenomy calibrate --from); not catalog data."]
    lines += [f"{k} = {_toml_value(v)}" for k, v in data.items()]
    for name, table in tables.items():
        lines += ["", f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None]
    return "\n".join(lines) + "\n"


def check_out(path, field: str = "out") -> Path:
    """``path`` if a terms file may be written there (a .toml in an existing folder), else a ValueError."""
    p = Path(path)
    if p.suffix != ".toml" or not p.resolve().parent.is_dir() or p.is_dir():
        raise ValueError(f"{field}: {str(path)!r} must be a .toml file in an existing folder")
    if loader.inside_catalog(p):
        raise ValueError(f"{field}: {str(path)!r} is inside the package catalog; write your terms elsewhere")
    return p


def write(f: UserEfficiencyFile, path, field: str = "out") -> Path:
    """Write ``f`` to ``path`` atomically: a temporary file in the same folder, read back and checked, then renamed
    over the target (an error leaves the target as it was)."""
    p = check_out(path, field)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".toml", dir=p.resolve().parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(to_toml(f))
        read(tmp, field)  # what is written must read back
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def read(path, field: str = "efficiency") -> UserEfficiencyFile:
    """A terms file written by `tokenomy calibrate --from`, validated; errors name ``field`` and the file."""
    name = Path(path).name
    try:
        data = loader.read_user_toml(path)
    except loader.CatalogError as e:
        raise ValueError(f"{field}: {e}") from None
    try:
        return UserEfficiencyFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ValueError(f"{field}: {name}: {where}: {err['msg']} (a file written by tokenomy calibrate --from)") \
            from None


def efficiency_set(path, chip: str) -> Efficiency:
    """The engine's efficiency set from a user terms file, for ``chip`` (the chip it was fitted on)."""
    f = read(path)
    if f.chip != chip:
        raise ValueError(f"efficiency: {Path(path).name} was calibrated on {f.chip}; this hardware's chip is {chip}")
    return _as_efficiency(f).with_(name="custom", terms_from=f"{Path(path).name} ({f.chip})")
