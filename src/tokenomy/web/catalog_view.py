"""The catalog browser's data: every chip, system, model, storage tier and API price with its sources."""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from tokenomy.catalog import loader
from tokenomy.answers.catalog import hardware_summary, model_summary
from tokenomy.web.params import Query

SECTIONS = ("peak_flops_per_s", "hbm", "scale_up", "scale_out", "power", "price")


def _sources(obj, sections=SECTIONS) -> list[dict]:
    out = []
    for s in sections:
        sec = getattr(obj, s, None)
        if sec is not None:
            out.append({"what": s, "source": sec.source, "as_of": sec.as_of.isoformat(), "note": sec.note})
    return out


@lru_cache(maxsize=1)
def model_provenance() -> dict[str, dict]:
    """catalog/models/SOURCES.toml by short model name (a fixed file, not chosen by any request)."""
    return {stem.partition("--")[2].lower(): v for stem, v in loader.model_sources().items()}


@lru_cache(maxsize=1)
def _catalog() -> dict:
    prov = model_provenance()
    chips = [{**hardware_summary(n), "vendor": loader.chip_file(n).vendor,
              "sources": _sources(loader.chip_file(n))} for n in loader.chip_names()]
    systems = []
    for n in loader.system_names():
        f = loader.system_file(n)
        systems.append({**hardware_summary(n), "display_name": f.display_name,
                        "sources": [{"what": "system", "source": f.source, "as_of": f.as_of.isoformat(),
                                     "note": f.note}] + _sources(f, ("price", "scale_up", "scale_out", "host"))})
    models = [{**model_summary(n), "provenance": prov.get(n, {})} for n in loader.model_names()]
    storage = [loader.storage_file(n).model_dump(mode="json") for n in loader.storage_names()]
    prices = [loader.price_file(n).model_dump(mode="json") for n in loader.price_names()]
    return {"chips": chips, "systems": systems, "models": models, "storage": storage, "prices": prices}


def catalog(params: Mapping[str, str]) -> dict:
    Query(params, ())
    return _catalog()
