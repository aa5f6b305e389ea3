"""`check_output`: valid JSON, an object for `json_object`, valid against
the schema; one fence around the whole answer tolerated, prose around it not."""

from __future__ import annotations

import pytest

from benchwarmers.panel.output_check import check_output, output_check, unwrapped
from benchwarmers.types import OutputCheck, OutputFormat

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["n"],
    "additionalProperties": False,
}
AS_SCHEMA = OutputFormat("json_schema", SCHEMA)
AS_OBJECT = OutputFormat("json_object")

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "output", "valid", "error"),
    [
        ('{"n": 1}', AS_SCHEMA, True, ""),
        ('```json\n{"n": 1}\n```', AS_SCHEMA, True, ""),
        ('  ```\n{"n": 1}```  ', AS_SCHEMA, True, ""),
        ('{"n": 1, "tags": ["a", 2]}', AS_SCHEMA, False, "$.tags[1]: 2 is not of type 'string'"),
        ('{"n": "one"}', AS_SCHEMA, False, "$.n: 'one' is not of type 'integer'"),
        ("{}", AS_SCHEMA, False, "$: 'n' is a required property"),
        (
            '{"n": 1, "x": 0}',
            AS_SCHEMA,
            False,
            "$: Additional properties are not allowed ('x' was unexpected)",
        ),
        ('Sure! {"n": 1}', AS_SCHEMA, False, "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ("", AS_SCHEMA, False, "empty answer, JSON was asked for"),
        ('{"a": [1]}', AS_OBJECT, True, ""),
        ("[1, 2]", AS_OBJECT, False, "a JSON object was asked for, not list"),
        # Python's reader takes these; JSON (and a client's parser) does not.
        ('{"n": NaN}', AS_OBJECT, False, "not JSON: NaN is not a JSON value"),
        ('{"n": 1, "x": -Infinity}', AS_OBJECT, False, "not JSON: -Infinity is not a JSON value"),
        (
            "Infinity",
            OutputFormat("json_schema", {"type": "number"}),
            False,
            "not JSON: Infinity is not a JSON value",
        ),
        (
            "{'a': 1}",
            AS_OBJECT,
            False,
            "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
    ],
)
def test_check_output(text: str, output: OutputFormat, valid: bool, error: str) -> None:
    assert check_output(text, output) == (valid, error)
    assert output_check(text, output) == OutputCheck(output.kind, valid, error)


def test_only_a_fence_around_the_whole_answer_is_taken_off() -> None:
    assert unwrapped('```json\n{"n": 1}\n```') == '{"n": 1}'
    assert unwrapped('Here:\n```json\n{"n": 1}\n```') == 'Here:\n```json\n{"n": 1}\n```'


def test_a_reasoning_models_leading_think_block_is_no_part_of_its_json() -> None:
    thought = '<think>\nThe user wants {"n": ...}; 1 will do.\n</think>\n\n```json\n{"n": 1}\n```'
    assert unwrapped(thought) == '{"n": 1}'
    assert check_output(thought, AS_OBJECT) == (True, "")
    assert check_output('Here <think>x</think> {"n": 1}', AS_OBJECT)[0] is False  # not leading: text


def test_a_long_error_is_cut() -> None:
    valid, error = check_output("x" * 2000, AS_OBJECT)
    assert not valid and len(error) <= 300


def test_the_draft_the_schema_names_is_used() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "maximum": 3,
        "exclusiveMaximum": True,
    }
    assert check_output("3", OutputFormat("json_schema", draft4)) == (
        False,
        "$: 3 is greater than or equal to the maximum of 3",
    )


def test_json_nested_too_deep_is_an_invalid_answer_not_a_crash() -> None:
    """A seat stuck writing `[[[[...` (a degenerate generation) is marked
    invalid like any answer that is not JSON; the panel goes on."""
    deep = "[" * 100_000 + "]" * 100_000
    for output in (OutputFormat("json_object"), OutputFormat("json_schema", {"type": "array"})):
        valid, error = check_output(deep, output)
        assert not valid and error == "not JSON: nested too deeply"


def test_a_value_too_deep_for_the_schema_check_is_invalid_not_a_crash() -> None:
    nested = OutputFormat("json_schema", {"type": "array", "items": {"$ref": "#"}})
    valid, error = check_output("[" * 500 + "]" * 500, nested)
    assert not valid and error == "nested too deeply to check against the schema"
