"""Read a user's benchmark file: which tool wrote it (by content, or as told), then that tool's reader.

    vllm      `vllm bench serve --save-result` JSON (ingest_vllm)
    aiperf    AIPerf / GenAI-Perf profile export JSON or CSV (ingest_aiperf)
    guidellm  GuideLLM benchmarks report JSON (ingest_guidellm)
Detection looks at the content, never the file name: a vLLM result has ``completed`` and the token totals, an
AIPerf/GenAI-Perf export has ``time_to_first_token`` objects beside its ``input_config``, a GuideLLM report has
``args`` and a ``benchmarks`` list; a CSV whose first cell is "Metric" is AIPerf's.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenomy.validation import ingest_aiperf, ingest_guidellm, ingest_vllm
from tokenomy.validation.measured_run import MeasuredRun, Reader

FORMATS = ("vllm", "aiperf", "guidellm")
MAX_BYTES = 256 * 2**20  # a --save-detailed vLLM file with per-token lists stays well below this


def detect(text: str) -> str | None:
    """The tool that wrote ``text``, or None."""
    if text.lstrip().startswith("Metric"):
        return "aiperf"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        first = next((x for x in text.splitlines() if x.strip()), "")
        try:  # --append-result: one vLLM result per line
            obj = json.loads(first)
        except json.JSONDecodeError:
            return None
    for name, test in (("vllm", ingest_vllm.is_vllm), ("aiperf", ingest_aiperf.is_aiperf),
                       ("guidellm", ingest_guidellm.is_guidellm)):
        if test(obj):
            return name
    return None


def _text(path: Path, r: Reader) -> str:
    if not path.is_file():
        raise r.fail("no such file")
    if path.stat().st_size > MAX_BYTES:
        raise r.fail(f"larger than {MAX_BYTES // 2**20} MiB: not a benchmark summary")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise r.fail("not a text file (UTF-8)") from None


def read(path, fmt: str | None = None, field: str = "against") -> list[MeasuredRun]:
    """The measured runs of the file at ``path`` (format ``fmt``, else detected); errors name ``field``."""
    p = Path(path)
    r = Reader(field, p.name)
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"format: {fmt!r}; allowed: {', '.join(FORMATS)}")
    text = _text(p, r)
    kind = fmt or detect(text)
    if kind is None:
        raise r.fail(f"not a benchmark file tokenomy reads; allowed: {', '.join(FORMATS)} (see --format)")
    if kind == "vllm":
        return ingest_vllm.read(text, r)
    if kind == "guidellm":
        return ingest_guidellm.read(text, r)
    if text.lstrip().startswith("Metric"):
        return ingest_aiperf.read_csv(text, r)
    return ingest_aiperf.read_json(text, r)
