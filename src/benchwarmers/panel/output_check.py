"""Whether an answer holds to the structured output it was asked in.

Every seat's answer (and the merged one) to an ask with an `OutputFormat`
is checked here: valid JSON (an object, for `json_object`), and valid
against the schema (`jsonschema`, the draft the schema names, else
2020-12). The check is the same whether the model was asked natively or
by prompt, so a seat's `bench.output` means one thing.

One code fence around the whole answer (```json ... ```) is tolerated: the
check reads what is inside (`unwrapped`), since models asked in the prompt
often add one and the JSON inside is what was asked for. A seat's content
stays as the model wrote it; the merged answer, which a client parses,
goes out unwrapped. Anything else around the JSON (prose before or after)
makes the answer invalid.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from jsonschema import validators

from benchwarmers.reasoning import answer_of
from benchwarmers.types import OutputCheck, OutputFormat

_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```\s*\Z", re.DOTALL)
# How many characters of an error go into `bench` (a schema error can quote a whole value).
ERROR_CHARS = 300


def unwrapped(text: str) -> str:
    """The answer without its leading think block (`reasoning`: a reasoning
    model asked for JSON still writes its working first) and without one
    code fence wrapped around all of it."""
    answer = answer_of(text)
    fenced = _FENCE.match(answer)
    return (fenced.group(1) if fenced else answer).strip()


def check_output(text: str, output: OutputFormat) -> tuple[bool, str]:
    """(valid, error): "" when valid, else the first thing wrong
    ("not JSON: Expecting value at line 1 column 1", "$.age: 'x' is not of
    type 'integer'")."""
    body = unwrapped(text)
    if not body:
        return False, "empty answer, JSON was asked for"
    try:
        value = json.loads(body, parse_constant=_not_json)
    except ValueError as exc:
        return False, _short(f"not JSON: {exc}")
    except RecursionError:  # `[[[[...`: a model stuck on one character, read as any non-JSON
        return False, "not JSON: nested too deeply"
    if output.kind == "json_object" or output.schema is None:
        if output.kind == "json_object" and not isinstance(value, dict):
            return False, f"a JSON object was asked for, not {type(value).__name__}"
        return True, ""
    try:
        error = _validator(json.dumps(output.schema, sort_keys=True)).best_match_error(value)
    except RecursionError:  # a value deeper than the validator can walk: no answer a reader wants
        return False, "nested too deeply to check against the schema"
    if error is None:
        return True, ""
    return False, _short(error)


def _not_json(word: str) -> object:
    """`NaN`, `Infinity` and `-Infinity`, which Python's reader takes and
    JSON has not: a client's parser (JSON.parse, a strict SDK) refuses an
    answer holding one, so it is no valid JSON here either."""
    raise ValueError(f"{word} is not a JSON value")


def output_check(text: str, output: OutputFormat) -> OutputCheck:
    """`check_output` as the value a seat's `bench` carries."""
    valid, error = check_output(text, output)
    return OutputCheck(output.kind, valid, error)


class _Validator:
    def __init__(self, schema: dict[str, object]) -> None:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        self.validator = cls(schema)

    def best_match_error(self, value: object) -> str | None:
        errors = sorted(self.validator.iter_errors(value), key=lambda e: (len(e.path), e.message))
        if not errors:
            return None
        first = errors[0]
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
        return f"{path}: {first.message}"


@lru_cache(maxsize=64)
def _validator(schema_text: str) -> _Validator:
    """One validator per schema (a panel checks every seat against the same one)."""
    return _Validator(json.loads(schema_text))


def _short(text: str) -> str:
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"
