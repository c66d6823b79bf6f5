"""The validated-value cache (catalog/cache.py, issue 14) never serves stale data: an edited catalog or efficiency
file, a file added where the pooled fit stood in, or changed builder code is seen on the next call; a bad file
still fails with its one-line error; an unusable cache dir only costs the validation. Each "new process" here is
the in-process caches cleared, so the value can only come from the cache dir or from the files."""

from __future__ import annotations

import shutil

import pytest

from tokenomy.catalog import cache, files, hardware_specs, loader
from tokenomy.catalog.loader import CatalogError
from tokenomy.validation import load


def new_process() -> None:
    for f in (loader.hardware, loader._file, loader._stems, loader._index, load.efficiency_for):
        f.cache_clear()


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    """A private copy of the chips, systems and efficiency files, and a private cache dir."""
    root = tmp_path / "catalog"
    for kind in ("chips", "systems", "efficiency"):
        shutil.copytree(loader.ROOT / kind, root / kind)
    monkeypatch.setattr(files, "ROOT", root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    new_process()
    yield root
    new_process()


def no_validation(monkeypatch) -> None:
    """From here on a value can only come from the cache: validating a file fails the test."""
    def refuse(*a, **k):
        raise AssertionError("validated a file: the cache was not used")
    monkeypatch.setattr(files, "_validate", refuse)
    monkeypatch.setattr(load, "_read", refuse)


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_second_process_is_answered_from_the_cache(catalog, monkeypatch):
    hw, eff = loader.hardware("hgx-h100-8"), load.efficiency_set("h100-sxm")
    assert len(list((catalog.parent / "xdg" / "tokenomy").glob("*.pickle"))) == 2
    new_process()
    no_validation(monkeypatch)
    again = loader.hardware("hgx-h100-8")
    assert again == hw and again.topology == hw.topology and load.efficiency_set("h100-sxm") == eff


def test_an_edited_chip_file_is_seen(catalog):
    assert loader.hardware("hgx-h100-8").chip.hbm_bytes_per_s == 3.35e12
    edit(catalog / "chips" / "h100-sxm.toml", "bytes_per_s = 3.35e12", "bytes_per_s = 4e12")
    new_process()
    assert loader.hardware("hgx-h100-8").chip.hbm_bytes_per_s == 4e12  # through the system
    assert loader.hardware("h100-sxm").chip.hbm_bytes_per_s == 4e12  # and as a bare chip


def test_an_edited_system_file_is_seen(catalog):
    assert loader.hardware("hgx-h100-8").num_chips == 8
    edit(catalog / "systems" / "hgx-h100-8.toml", "num_chips = 8", "num_chips = 16")
    new_process()
    assert loader.hardware("hgx-h100-8").num_chips == 16


def test_a_bad_file_fails_with_its_field_every_time_and_is_never_cached(catalog):
    loader.hardware("hgx-h100-8")
    edit(catalog / "chips" / "h100-sxm.toml", "bytes_per_s = 3.35e12", "bytes_per_s = -1")
    for _ in range(2):
        new_process()
        with pytest.raises(CatalogError, match=r"^h100-sxm.toml: field 'hbm.bytes_per_s'"):
            loader.hardware("hgx-h100-8")
    edit(catalog / "chips" / "h100-sxm.toml", "bytes_per_s = -1", "bytes_per_s = 3.35e12")
    new_process()
    assert loader.hardware("hgx-h100-8").chip.hbm_bytes_per_s == 3.35e12


def test_an_edited_efficiency_file_is_seen(catalog):
    path = catalog / "efficiency" / "h100-sxm.toml"
    before = load.efficiency_set("h100-sxm").hbm_fraction
    line = next(x for x in path.read_text().splitlines() if x.startswith("hbm_fraction = "))
    edit(path, line, "hbm_fraction = 0.5")
    new_process()
    assert before != 0.5 and load.efficiency_set("h100-sxm").hbm_fraction == 0.5


def test_a_chips_own_fit_replaces_the_pooled_one_once_written(catalog):
    own = catalog / "efficiency" / "h100-sxm.toml"
    own.rename(catalog / "h100-sxm.toml.away")
    assert load.efficiency_set("h100-sxm").terms_from == "pooled"
    (catalog / "h100-sxm.toml.away").rename(own)
    new_process()
    assert load.efficiency_set("h100-sxm").terms_from == "h100-sxm"


def test_changed_builder_code_is_never_served_the_old_pickle(catalog, tmp_path, monkeypatch):
    code = tmp_path / "builder.py"
    code.write_text("A = 1\n")
    monkeypatch.setattr(cache, "CODE", (*cache.CODE, code))
    loader.hardware("h100-sxm")
    new_process()
    code.write_text("A = 2\n")
    calls = []
    real = loader._chip_hardware
    monkeypatch.setattr(hardware_specs, "_chip_hardware", lambda stem: calls.append(stem) or real(stem))
    loader.hardware("h100-sxm")
    assert calls == ["h100-sxm"]  # rebuilt


def test_a_copy_of_the_catalog_elsewhere_has_its_own_entries(catalog, tmp_path, monkeypatch):
    loader.hardware("hgx-h100-8")
    other = tmp_path / "other"
    shutil.copytree(catalog, other)
    edit(other / "systems" / "hgx-h100-8.toml", "num_chips = 8", "num_chips = 16")
    monkeypatch.setattr(files, "ROOT", other)
    new_process()
    assert loader.hardware("hgx-h100-8").num_chips == 16


@pytest.mark.parametrize("spoil", ["a file where the dir should be", "a corrupt entry"])
def test_an_unusable_cache_dir_only_costs_the_validation(catalog, tmp_path, monkeypatch, spoil):
    if spoil == "a corrupt entry":
        loader.hardware("hgx-h100-8")
        for p in (tmp_path / "xdg" / "tokenomy").glob("*.pickle"):
            p.write_bytes(b"not a pickle")
    else:
        blocker = tmp_path / "blocker"
        blocker.write_text("")  # even root cannot make a directory below a plain file
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    for _ in range(2):
        new_process()
        assert loader.hardware("hgx-h100-8").num_chips == 8
        assert load.efficiency_set("h100-sxm").name == "calibrated"


def test_a_simple_answer_validates_no_catalog_file_once_cached(tmp_path):
    """issue 14: the decode answer's second start reads its hardware and efficiency set from the cache: no catalog
    schema is imported (module names checked, never the wall-clock time; benchmarks/cli_startup.py times it).
    pydantic itself loads either way: typer coerces options through it (its public API, issue 27)."""
    import os
    import subprocess
    import sys

    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr))\n"
             "from tokenomy.cli import main\n"
             "sys.argv = ['tokenomy'] + sys.argv[1:]\n"
             "main()\n")
    argv = ["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1,64", "--json"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, timeout=120)
            for _ in range(2)]
    mods = [set(next(x for x in r.stderr.splitlines() if x.startswith("MODULES ")).split()[1:]) for r in runs]
    assert runs[0].stdout == runs[1].stdout and '"batch": 64' in runs[1].stdout
    schemas = {"tokenomy.catalog.schema", "tokenomy.validation.terms_schema"}  # the hardware's, the fitted terms'
    assert schemas <= mods[0]  # the first start validated
    assert not (schemas | {"tokenomy.validation.schema"}) & mods[1]


def test_an_entry_records_the_validating_pydantic(catalog, tmp_path):
    import pickle

    loader.hardware("h100-sxm")
    (entry,) = (tmp_path / "xdg" / "tokenomy").glob("*.pickle")
    sources = pickle.loads(entry.read_bytes())["sources"]
    assert any(p.endswith("pydantic/version.py") and b for p, b in sources.items())
    assert {str(p) for p in cache.CODE} <= set(sources)
