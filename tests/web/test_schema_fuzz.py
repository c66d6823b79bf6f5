"""Fuzz the JSON API from its own OpenAPI schema (schemathesis, in-process ASGI, no network): over every operation,
values that fit the schema and values that break it, a fixed number of examples each, derandomized. No answer may be
a 500 or carry a traceback; every refusal is FastAPI's 422 shape with one line naming a field."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from tokenomy.web.app import create_app

pytestmark = pytest.mark.xdist_group("schema_fuzz")  # one worker runs the module in order (make test: --dist loadgroup)
EXAMPLES = 30  # per operation and mode
APP = create_app(allowed_hosts=("testserver",))
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)
OPERATIONS = [op.ok() for op in SCHEMA.get_all_operations()]
PAIRS = sorted((op.label, mode) for op in OPERATIONS for mode in ("positive", "negative")
               if mode == "positive" or op.query or op.body)  # nothing to break in an operation without inputs
CASES: Counter = Counter()  # (label, mode) -> cases run
STATUSES: Counter = Counter()  # (mode, status) -> cases


def check_answer(status: int, text: str) -> None:
    assert status < 500, text[:300]
    assert "Traceback" not in text and "Internal Server Error" not in text
    if status == 422:
        detail = json.loads(text)["detail"][0]
        msg = detail["msg"]
        assert detail["loc"][-1] and msg and "\n" not in msg, detail
        assert "--" not in msg and "Missing option" not in msg, msg  # no CLI flags on the web
    elif status == 200:
        json.loads(text)


@pytest.mark.parametrize("label, mode", PAIRS)
def test_no_server_error_over_the_schema(label, mode):
    operation = SCHEMA.find_operation_by_label(label)

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=GenerationMode(mode)))
    def fuzz(case):
        response = case.call()
        CASES[label, mode] += 1
        STATUSES[mode, response.status_code] += 1
        check_answer(response.status_code, response.text)

    fuzz()
    assert CASES[label, mode] >= 1


def test_the_fuzz_covered_every_operation_and_reached_the_answers():
    """Runs last in this module: every pair was fuzzed, and values that fit the schema were answered (200), not
    only refused (the counts are printed for the report)."""
    missing = [p for p in PAIRS if not CASES[p]]
    assert not missing, f"not fuzzed (run the whole module): {missing[:5]}"
    answered = {label for (label, mode), n in CASES.items() if mode == "positive"} and STATUSES["positive", 200]
    assert answered, STATUSES
    print(f"\nschemathesis: {sum(CASES.values())} cases over {len(OPERATIONS)} operations ({len(PAIRS)} operation x "
          f"mode pairs); statuses {dict(sorted(STATUSES.items()))}")
