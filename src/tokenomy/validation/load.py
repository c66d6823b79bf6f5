"""Read the validation catalog and the fitted efficiency files; the declared train/test split.

pydantic (validation/schema.py, terms_schema.py) is imported only where a file is validated: ``efficiency_set``, the one thing a
simple answer asks of this module, comes from the validated-value cache (catalog/cache.py) while its file is
unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from tokenomy.catalog import cache, loader
from tokenomy.core.efficiency import Efficiency
from tokenomy.validation.serving_terms import efficiency_kwargs

if TYPE_CHECKING:
    from tokenomy.validation.schema import ServingCase, Skipped, Source, TrainingCase, ValidationFile
    from tokenomy.validation.terms_schema import EfficiencyFile, SplitRule

CASES, EFF = "validation", "efficiency"  # catalog/validation/*.toml (one source each), catalog/efficiency/*.toml


@dataclass(frozen=True)
class Case:
    """A case with its source, resolved split and whether its model and chip are in the catalog."""

    case: ServingCase | TrainingCase
    source: Source
    split: str  # "train" or "test"

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def kind(self) -> str:
        from tokenomy.validation.schema import TrainingCase

        return "training" if isinstance(self.case, TrainingCase) else "serving"

    @property
    def metric(self) -> str:
        return "train_step_s" if self.kind == "training" else self.case.metric


def _read(kind: str, stem: str, schema, raw: bytes | None = None):
    """catalog/<kind>/<stem>.toml (its bytes ``raw`` where the caller read them already) validated against
    ``schema``."""
    from pydantic import ValidationError

    try:
        return schema.model_validate(loader.read_toml(kind, stem, raw))
    except ValidationError as e:
        first = str(e).splitlines()
        raise loader.CatalogError(f"{stem}.toml: {' '.join(first[:3])}") from None


@lru_cache(maxsize=1)
def split_rule() -> SplitRule:
    from tokenomy.validation.terms_schema import SplitRule

    return _read(EFF, "split", SplitRule)


def split_of(case_id: str, rule: SplitRule | None = None) -> str:
    """sha256 of the case id, first 8 hex digits as an integer, modulo the rule's modulus."""
    import hashlib

    r = rule or split_rule()
    h = int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16)
    return "train" if h % r.modulus < r.train_below else "test"


@lru_cache(maxsize=1)
def validation_files() -> tuple[ValidationFile, ...]:
    from tokenomy.validation.schema import ValidationFile

    return tuple(_read(CASES, stem, ValidationFile) for stem in loader.catalog_stems(CASES))


def cases(sources: tuple[str, ...] | None = None) -> list[Case]:
    """Every case (serving and training), optionally only from the named source ids; ids must be unique."""
    out: list[Case] = []
    seen: set[str] = set()
    for f in validation_files():
        if sources and f.source.id not in sources:
            continue
        for c in (*f.serving, *f.training):
            if c.id in seen:
                raise loader.CatalogError(f"validation case id {c.id!r} appears twice")
            seen.add(c.id)
            out.append(Case(c, f.source, c.split or _held_out(c) or split_of(c.id)))
    return out


def _held_out(c) -> str | None:
    """"test" for a disaggregated case: predicted by serving.disagg outside the vectorised fit
    (validation/disagg_cases.py), it is never fitted on."""
    return "test" if getattr(c, "mode", "agg") == "disagg" else None


def skipped() -> list[tuple[Source, Skipped]]:
    return [(f.source, s) for f in validation_files() for s in f.skipped]


def efficiency_file(chip: str) -> EfficiencyFile | None:
    from tokenomy.validation.terms_schema import EfficiencyFile

    return _read(EFF, chip, EfficiencyFile) if loader.catalog_path(EFF, chip).is_file() else None


def _efficiency_read(chip: str) -> tuple[EfficiencyFile, cache.Sources]:
    """The chip's fitted terms, else those of the chip on the same die (catalog chips' same_die_as: an export variant
    runs the same kernels), else the pooled fit, and the bytes they were validated from (the files passed over
    recorded absent, so adding one is seen)."""
    from tokenomy.validation.terms_schema import EfficiencyFile

    own, pooled = loader.catalog_path(EFF, chip), loader.catalog_path(EFF, "pooled")
    die = loader.chip_file(chip).same_die_as if chip in loader.chip_names() else ""
    sibling = [(loader.catalog_path(EFF, die), {own: None})] if die else []
    for path, absent in ((own, {}), *sibling, (pooled, {own: None, **dict.fromkeys(p for p, _ in sibling)})):
        if (raw := cache.read_bytes(path)) is not None:
            return _read(EFF, path.stem, EfficiencyFile, raw), {**absent, path: raw}
    raise loader.CatalogError("catalog/efficiency/pooled.toml is missing; run `tokenomy validate --refit`")


@lru_cache(maxsize=64)
def efficiency_for(chip: str) -> EfficiencyFile:
    """The chip's fitted terms, else the pooled fit (every chip's training split)."""
    return _efficiency_read(chip)[0]


def _efficiency_set(chip: str) -> tuple[Efficiency, cache.Sources]:
    f, sources = _efficiency_read(chip)
    return _as_efficiency(f), sources


def efficiency_set(chip: str) -> Efficiency:
    """The chip's calibrated efficiency set for the engine (core.efficiency.Efficiency), from its fitted terms;
    from the cache while the file it comes from is unchanged (read afresh on a miss, whatever efficiency_for
    holds: a refit is seen)."""
    return cache.cached(("efficiency", chip, str(loader.catalog_path(EFF, chip))), lambda: _efficiency_set(chip))


def _as_efficiency(f: EfficiencyFile) -> Efficiency:
    return Efficiency(**efficiency_kwargs(lambda name: getattr(f.terms, name)), name="calibrated",
                      terms_from=f.chip, fitted_on_cases=len(f.fitted_on))
