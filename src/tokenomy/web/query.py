"""A web query and its errors: the query string of one request (unknown parameters refused), one value of it
parsed by the grammar (answers/inputs) and bounded by the one table (the web's budgets narrower), catalog names
looked up by name only (never a path), and how an error names the field it is about (422, shown inline)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable, Mapping

from tokenomy.answers import inputs
from tokenomy.answers.door import LISTS
from tokenomy.arch.model import ModelArch
from tokenomy.catalog import loader
from tokenomy.specs import Hardware
from tokenomy.units import DTYPE_BYTES

MAX_VALUE_CHARS = 200  # any one query value, except the config token
MAX_CONFIG_TOKEN_CHARS = 24_000  # fits comfortably in a URL (uvicorn/h11 accept ~64 kB of request line)
MAX_CONFIG_BYTES = 64_000  # an uploaded config.json; real ones are 1-5 kB
MAX_LIST = 64  # names in one list (lecture ids)
MAX_GRID = 1024  # points one request evaluates: a list's values, or the product of its lists' lengths (budget())
MAX_OVERHEAD_S = 10.0
MAX_MODELS = 8  # models compared on one page

WEB_BUDGETS = {"requests": 100_000,  # simulated requests per page or API call (the CLI: what the machine holds)
               "max_chips": 256}  # min_chips: chip counts tried per use case (1..256: nine serve answers each)
NUMBERS = {**inputs.FIELDS, **{k: replace(inputs.FIELDS[k], hi=v) for k, v in WEB_BUDGETS.items()}}  # the one
# table (answers/inputs.py), the web's budgets narrower
# serve's disaggregated pools: the answer takes them as one dict (``pools``), the query as flat fields, each pool's
# chips and layout degrees and flags by the pool's prefix (the CLI's --prefill-tp, ...; answers.workloads)
POOL_KINDS = {"chips": "int", "tp": "int", "ep": "int", "pp": "int", "dp": "int", "redundant_experts": "int",
              "attn_dp": "bool", "kv_batch": "bool"}
POOL_FIELDS = {f"{pool}_{k}": kind for pool in ("prefill", "decode") for k, kind in POOL_KINDS.items()}
NUMBERS |= {f"{pool}_{k}": NUMBERS[k] for pool in ("prefill", "decode") for k, kind in POOL_KINDS.items()
            if kind == "int" and f"{pool}_{k}" not in NUMBERS}


class FieldError(ValueError):
    """Bad input, tied to the query field that carries it; answered with 422 and shown inline."""

    def __init__(self, field: str, msg: str):
        super().__init__(f"{field}: {msg}")
        self.field, self.msg = field, msg


_NAME = r"(?:--)?[a-z][a-z0-9_-]*"
_HEAD = re.compile(rf"\s*({_NAME}(?:(?:, | and ){_NAME})*)(?::| x )")  # 'tp, ep, pp, dp: ...', 'a and b: ...'


def field_of(e: ValueError, given: Iterable[str] = ()) -> str:
    """The field a ValueError is about: the answers put it first ('batch: must be ...'), else 'input'. Of several
    ('rl_penalty and inference_penalty: ...') the first the request gave, else the first named."""
    if isinstance(e, FieldError):
        return e.field
    m = _HEAD.match(str(e))
    if not m:
        return "input"
    names = [n.removeprefix("--").replace("-", "_") for n in re.split(r", | and ", m.group(1))]
    return next((n for n in names if n in set(given)), names[0])


def message_of(e: ValueError) -> str:
    """The message without a leading single 'field:' (the field is shown beside it); a list of fields stays."""
    if isinstance(e, FieldError):
        return e.msg
    line = (str(e).splitlines() or [type(e).__name__])[0]
    m = _HEAD.match(line)
    single = m is not None and m.group(0).rstrip().endswith(":") and not re.search(r", | and ", m.group(1))
    return (line[m.end():].strip() or line) if single else line


def _field_error(parse, name: str, value):
    """``parse(name, value)`` with a refusal as the web's FieldError (shown beside the field, 422)."""
    try:
        return parse(name, value)
    except inputs.InputError as e:
        raise FieldError(e.field, e.msg) from None




class Query:
    """The query string of one request; refuses parameters the endpoint does not know (typos are errors)."""

    def __init__(self, params: Mapping[str, str], allowed: tuple[str, ...]):
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise FieldError(unknown[0] or "query", f"unknown parameter {unknown[0]!r}; "
                             + (f"allowed: {', '.join(allowed)}" if allowed else "this takes no parameters"))
        self.p = params

    def text(self, name: str, default: str | None = None, limit: int = MAX_VALUE_CHARS) -> str | None:
        v = self.p.get(name)
        if v is None or v.strip() == "":
            return default
        if len(v) > limit:
            raise FieldError(name, f"longer than {limit} characters")
        return v.strip()

    def choice(self, name: str, allowed: list[str] | tuple[str, ...], default: str | None = None) -> str | None:
        v = self.text(name, default)
        if v is not None and v not in allowed:
            raise FieldError(name, f"{v!r} is not allowed; allowed: {', '.join(allowed)}")
        return v

    def number(self, name: str, default: float | None) -> float | int | None:
        """One number of field ``name`` in the grammar (answers/inputs), bounded by its FIELDS row; absent or
        blank: ``default``."""
        v = self.text(name)
        if v is None:
            return default
        x = _field_error(inputs.number, name, v)
        if not NUMBERS[name].admits(x):
            raise FieldError(name, f"{v} is out of range {NUMBERS[name]} (the web's budget)")
        return x

    def numbers(self, name: str, default: str) -> list:
        """A list of field ``name`` in the grammar (1,8,64, 1..4096, 1k..1M:256log), within the web's budget."""
        values = _field_error(inputs.numbers, name, self.text(name, default))
        budget(name, [len(values)])
        return values

    def dtype(self, name: str, default: str | None) -> str | None:
        return self.choice(name, tuple(DTYPE_BYTES), default)


def budget(name: str, lengths: list[int]) -> None:
    """The one rule for lists at the web (docs/DEVNOTES.md, 'Lists'): every door reads a list by the same grammar
    (up to inputs.MAX_VALUES values, 1k..1M:256log included); a web request also evaluates at most MAX_GRID points
    (a list's values, or the product of its lists' lengths: one answer's arrays), refused naming the first list."""
    n = 1
    for k in lengths:
        n *= k
    if n > MAX_GRID:
        shape = f"{' x '.join(f'{k:,}' for k in lengths)} = {n:,} points" if len(lengths) > 1 else f"{n:,} values"
        raise FieldError(name, f"{shape}; the web answers at most {MAX_GRID:,} points a request "
                               f"(tokenomy and tk.* take lists of up to {inputs.MAX_VALUES:,} values)")


def refuse_emptied(params: Mapping[str, str], prefilled: Iterable[str]) -> None:
    """A page's pre-filled number field sent back empty is refused by name (422), never silently its default."""
    for name in prefilled:
        if name in params and not params[name].strip():
            _field_error(inputs.number if name not in LISTS else inputs.numbers, name, "")


def model_by_name(name: str) -> ModelArch:
    """A catalog model by a name or alias only (never a path)."""
    known = loader.catalog_model(name)
    if known is None:
        raise FieldError("model", f"unknown model {name!r}; allowed: {', '.join(loader.model_names())}")
    return loader.model(known)


def model_list(name: str, texts: Iterable[str]) -> list[ModelArch]:
    """Catalog models by short name (``models=a,b`` or repeated ``models=``), the error naming ``name``."""
    names = [t.strip() for t in texts if t.strip()]
    if not names:
        raise FieldError(name, "give at least one catalog model")
    if len(names) > MAX_MODELS:
        raise FieldError(name, f"{len(names)} models; at most {MAX_MODELS}")
    try:
        return [model_by_name(n) for n in names]
    except FieldError as e:
        raise FieldError(name, e.msg) from None


def hardware_names() -> list[str]:
    return loader.chip_names() + loader.system_names()


def hardware_by_name(name: str, field: str = "hardware") -> Hardware:
    """A catalog chip or system by a name or alias only (h100, NVL72, ...; never a path); a refusal names ``field``."""
    stem = loader.resolve("systems", name) or loader.resolve("chips", name)
    if stem is None:
        raise FieldError(field, f"unknown hardware {name!r}; allowed: {', '.join(hardware_names())}")
    return loader.hardware(stem)


