"""Each format's structured-output setting read into one `OutputFormat`,
bad values a `UserError` naming the caller's own field; Gemini's OpenAPI
schema read into JSON Schema."""

from __future__ import annotations

import pytest

from benchwarmers.errors import UserError
from benchwarmers.formats.output import (
    anthropic_output_format,
    chat_response_format,
    gemini_output,
    ollama_format,
    openapi_to_json_schema,
    responses_text_format,
)
from benchwarmers.types import OutputFormat

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

pytestmark = pytest.mark.unit


def test_each_formats_spelling_reads_into_one_value() -> None:
    named = OutputFormat("json_schema", SCHEMA, name="count", strict=True)
    chat = {"type": "json_schema", "json_schema": {"name": "count", "schema": SCHEMA, "strict": True}}
    assert chat_response_format(chat) == named
    assert chat_response_format({"type": "json_object"}) == OutputFormat("json_object")
    assert chat_response_format({"type": "text"}) is None and chat_response_format(None) is None
    responses = {"type": "json_schema", "name": "count", "schema": SCHEMA, "strict": True}
    assert responses_text_format(responses) == named
    assert anthropic_output_format({"type": "json_schema", "schema": SCHEMA}, "x") == OutputFormat(
        "json_schema", SCHEMA
    )
    assert gemini_output("application/json", None, SCHEMA) == OutputFormat("json_schema", SCHEMA)
    assert gemini_output("application/json", None, None) == OutputFormat("json_object")
    assert gemini_output("text/plain", None, None) is None
    assert ollama_format("json") == OutputFormat("json_object")
    assert ollama_format(SCHEMA) == OutputFormat("json_schema", SCHEMA)
    assert ollama_format("") is None


def test_strict_takes_an_object_root_given_by_a_local_ref() -> None:
    node = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
    schema = {"$defs": {"Node": node}, "$ref": "#/$defs/Node"}
    spec = {"type": "json_schema", "json_schema": {"name": "tree", "strict": True, "schema": schema}}
    assert chat_response_format(spec) == OutputFormat("json_schema", schema, name="tree", strict=True)
    with pytest.raises(UserError, match="must be an object schema"):
        chat_response_format(
            {
                **spec,
                "json_schema": {**spec["json_schema"], "schema": {"$defs": {"S": {}}, "$ref": "#/$defs/S"}},
            }
        )


def test_refs_that_resolve_within_the_schema_are_taken() -> None:
    """Pydantic's `$defs`, anchors and a nested `$id` resolve; a `$ref` in
    data (an `enum` value) is not one."""
    item = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for schema in (
        {"$defs": {"Item": item}, "type": "object", "properties": {"i": {"$ref": "#/$defs/Item"}}},
        {"$defs": {"a": {"$anchor": "foo", "type": "string"}}, "properties": {"x": {"$ref": "#foo"}}},
        {"$defs": {"i": {"$id": "item", "$defs": {"q": {}}, "properties": {"z": {"$ref": "#/$defs/q"}}}}},
        {"enum": [{"$ref": "#/nowhere"}]},
        {"type": "object", "properties": {"$ref": {"type": "string"}}},
    ):
        assert ollama_format(schema) == OutputFormat("json_schema", schema)


def test_gemini_openapi_schema_reads_into_json_schema() -> None:
    given = {
        "type": "OBJECT",
        "properties": {
            "name_of": {"type": "STRING", "nullable": True},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "min_items": 1},
            "either": {"any_of": [{"type": "INTEGER"}, {"type": "BOOLEAN"}]},
        },
        "required": ["name_of"],
        "property_ordering": ["name_of", "tags"],
        "additional_properties": False,
    }
    assert openapi_to_json_schema(given) == {
        "type": "object",
        "properties": {
            "name_of": {"type": ["string", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        },
        "required": ["name_of"],
        "additionalProperties": False,
    }
    assert gemini_output("application/json", given, None).schema == openapi_to_json_schema(given)  # type: ignore[union-attr]


def test_gemini_int64_counts_sent_as_strings_are_numbers() -> None:
    """Gemini's REST reference types `minItems` and the like int64, which its
    JSON writes as strings (the JS SDK's types say string): Gemini takes
    them, so a 400 ('1' is not of type 'integer') refused a valid request."""
    given = {
        "type": "OBJECT",
        "properties": {
            "tags": {"type": "ARRAY", "items": {"type": "STRING", "minLength": "2"}, "maxItems": "3"},
        },
        "minProperties": "1",
    }
    read = gemini_output("application/json", given, None)
    assert read is not None and read.schema == {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string", "minLength": 2}, "maxItems": 3}},
        "minProperties": 1,
    }


@pytest.mark.parametrize(
    ("read", "says"),
    [
        (
            lambda: chat_response_format({"type": "json_schema", "json_schema": {"name": ""}}),
            "name is required",
        ),
        (
            lambda: responses_text_format({"type": "json_schema", "schema": SCHEMA}),
            "text.format.name is required",
        ),
        (
            lambda: anthropic_output_format({"type": "json_schema", "schema": {"type": 5}}, "output_format"),
            "output_format.schema['type'] is not a valid JSON Schema",
        ),
        (lambda: gemini_output("application/json", SCHEMA, SCHEMA), "send one of them"),
        (lambda: ollama_format(["json"]), 'format must be "json"'),
        (
            lambda: chat_response_format(
                {
                    "type": "json_schema",
                    "json_schema": {"name": "n", "strict": True, "schema": {"type": "string"}},
                }
            ),
            "response_format.json_schema.schema must be an object schema"
            ' ("type": "object") when strict is true',
        ),
        (
            lambda: responses_text_format(
                {"type": "json_schema", "name": "n", "strict": True, "schema": {"type": "array"}}
            ),
            "text.format.schema must be an object schema",
        ),
        (
            lambda: ollama_format({"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}),
            "format['properties']['a']['$ref'] '#/$defs/nope' does not resolve within the schema",
        ),
        (
            lambda: anthropic_output_format(
                {"type": "json_schema", "schema": {"$ref": "http://169.254.169.254/x"}}, "output_format"
            ),
            "output_format.schema['$ref'] 'http://169.254.169.254/x' does not resolve",
        ),
        # Each of these was a 500 (before any seat, or when the answers were checked).
        (lambda: ollama_format({"$schema": 5, "type": "object"}), "format['$schema'] must be a string"),
        (
            lambda: ollama_format({"$dynamicRef": "#meta", "type": "object"}),
            "format['$dynamicRef'] '#meta' does not resolve within the schema",
        ),
        (
            lambda: ollama_format({"anyOf": [{"type": "object"}], "$ref": "#/anyOf/x"}),
            "format['$ref'] '#/anyOf/x' does not resolve within the schema",
        ),
        (
            lambda: ollama_format({"type": "object", "$ref": "#/type/0/x"}),
            "format['$ref'] '#/type/0/x' does not resolve within the schema",
        ),
        (
            lambda: ollama_format({"properties": {"x": {"$ref": "#/properties/y/enum"}, "y": {"enum": [1]}}}),
            "format['properties']['x']['$ref'] '#/properties/y/enum' points to an array, not a schema",
        ),
    ],
)
def test_bad_values_name_the_callers_field(read, says: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match=None) as refused:
        read()
    assert says in str(refused.value)


def test_a_dynamic_ref_to_its_anchor_is_taken() -> None:
    schema = {"$defs": {"node": {"$dynamicAnchor": "meta", "type": "object"}}, "$dynamicRef": "#meta"}
    read = ollama_format(schema)
    assert read is not None and read.schema == schema
