"""Schemathesis against our own `/openapi.json`: every operation it lists,
with bounded examples per operation (its strategies, driven by
hypothesis). No answer is a 5xx; the number of cases run is printed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import schemathesis
from hypothesis import HealthCheck, given, settings

from .hardening_support import Bench

EXAMPLES = 8


def test_no_operation_of_the_schema_answers_5xx(bench: Bench, counts: Callable[[str], None]) -> None:
    # The schema is built on its first request: on a loaded machine that takes longer than
    # the loader's 10 s default.
    schema = schemathesis.openapi.from_url(bench.url + "/openapi.json", timeout=60)
    cases: Counter[str] = Counter()
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        def run(case: schemathesis.Case) -> None:
            cases[case.operation.label] += 1
            response = case.call(base_url=bench.url, timeout=30)
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:200]}"
                )

        run()
    total = sum(cases.values())
    counts(f"schemathesis: {total} fuzz cases over {len(operations)} operations, {len(failures)} 5xx")
    assert len(operations) > 20
    assert not failures, failures[:5]
