"""Hardware names as people type them: each chip/system file's ``aliases`` resolve to it, and no alias is ambiguous."""

import pytest

from tokenomy.catalog import loader
from tokenomy.catalog.loader import CatalogError


def _all_names():
    for kind, names in (("chips", loader.chip_names()), ("systems", loader.system_names())):
        for stem in names:
            f = loader.chip_file(stem) if kind == "chips" else loader.system_file(stem)
            yield kind, stem, f.aliases


def test_every_alias_names_one_file_and_no_stem():
    seen: dict[str, str] = {}
    stems = set(loader.chip_names()) | set(loader.system_names())
    for _, stem, aliases in _all_names():
        for a in aliases:
            key = loader._key(a)
            assert key not in stems, f"{stem}: alias {a!r} is another file's name"
            assert seen.setdefault(key, stem) == stem, f"alias {a!r} claimed by {seen[key]} and {stem}"


@pytest.mark.parametrize("typed,name", [
    ("h100", "h100-sxm"), ("H100", "h100-sxm"), ("h100-sxm", "h100-sxm"), ("H100_SXM", "h100-sxm"),
    ("a100", "a100-80gb-sxm"), ("b200", "b200"), ("nvl72", "gb200-nvl72"), ("GB200-NVL72", "gb200-nvl72"),
    ("mi300x", "mi300x"), ("MI300X", "mi300x"), ("TPU v5e", "tpu-v5e"), ("v5p", "tpu-v5p"), ("trillium", "tpu-v6e"),
    ("ironwood", "tpu-v7"), ("hgx-h100", "hgx-h100-8"), ("vr200", "vr200-nvl144"),
])
def test_typed_names_resolve(typed, name):
    assert loader.hardware(typed).name == name


def test_a_system_keeps_its_chip_count_under_an_alias():
    assert loader.hardware("nvl72").num_chips == 72 and loader.hardware("h100").num_chips == 1


def test_unknown_hardware_offers_the_three_nearest():
    with pytest.raises(CatalogError, match=r"did you mean h100-sxm, [^,]+, [^?]+\?") as e:
        loader.hardware("h1000")
    assert str(e.value).count("\n") == 0


def test_unknown_chip_file_name_offers_the_nearest():
    with pytest.raises(CatalogError, match=r"unknown chip 'h10'; did you mean .*h100-sxm"):
        loader.chip_file("h10")


def test_unknown_model_offers_the_three_nearest():
    with pytest.raises(CatalogError, match=r"did you mean llama-3\.1-70b, .*, .*\?"):
        loader.model("llama-3.1-7b")


@pytest.mark.parametrize("path", ["/nonexistent/config.json", "nope.json", "some/dir"])
def test_a_missing_path_says_no_such_file(path):
    with pytest.raises(CatalogError, match=f"^no such file: {path}"):
        loader.model(path)
