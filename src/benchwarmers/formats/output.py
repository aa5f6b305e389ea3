"""Structured output, read from every inbound format into one `OutputFormat`.

Each API spells "answer in JSON (against this schema)" its own way: OpenAI
chat's `response_format`, Responses' `text.format`, Anthropic's
`output_config.format` (and the beta's top-level `output_format`), Gemini's
`generationConfig.responseMimeType` with `responseSchema` (an OpenAPI
subset, types in capitals) or `responseJsonSchema`, Ollama's `format`
("json" or a schema). The formats call the reader of their own spelling
here, so what counts as a bad value (an unknown type, a schema that is not
a JSON Schema) is judged once, as a `UserError` naming the caller's own
field: a 400 in the caller's error shape, never a silent drop.

How each provider API is sent the format is `providers/structured_output.py`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from jsonschema import exceptions as schema_errors
from jsonschema import validators
from referencing import Registry, Specification
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

from benchwarmers.errors import UserError
from benchwarmers.formats.base import json_type, require_object
from benchwarmers.types import OutputFormat

JSON_OBJECT = OutputFormat("json_object")
JSON_MIME = "application/json"


def _schema(value: object, where: str) -> dict[str, Any]:
    """A JSON Schema the caller sent, checked against its own metaschema
    (draft 2020-12 unless it names another): a schema no validator could
    apply is the caller's mistake, said now, not at every seat."""
    schema = dict(require_object(value, where))
    if "$schema" in schema and not isinstance(schema["$schema"], str):  # validator_for reads it as a URL
        raise UserError(f"{where}['$schema'] must be a string naming a JSON Schema draft")
    try:
        validators.validator_for(schema, default=validators.Draft202012Validator).check_schema(schema)
    except schema_errors.SchemaError as exc:
        at = "".join(f"[{p!r}]" for p in exc.absolute_path)
        raise UserError(f"{where}{at} is not a valid JSON Schema: {exc.message}") from None
    dialect = schema.get("$schema")
    spec = specification_with(dialect if isinstance(dialect, str) else "", default=DRAFT202012)
    _refs_resolve(schema, spec, Registry().resolver_with_root(spec.create_resource(schema)), where, "")
    return schema


# The keywords that point elsewhere in the schema (`$dynamicRef`: 2020-12's,
# `$recursiveRef`: 2019-09's), each checked as `$ref` is.
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose values are data, not subschemas: a "$ref" inside is a value.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _refs_resolve(node: object, spec: Specification[Any], resolver: Any, where: str, at: str) -> None:
    """Every `$ref` in the schema resolves within it: one that does not
    (a `#/$defs/...` that is not there, a URL: nothing is fetched) could
    check no answer, so it is the caller's mistake, said now."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _refs_resolve(item, spec, resolver, where, f"{at}[{i}]")
        return
    if not isinstance(node, dict):
        return
    if at and isinstance(node.get("$id"), str):  # a nested resource: its refs are relative to it
        # An anchor-only `$id` (draft 7's "#foo") that is no resource: the same base.
        with contextlib.suppress(Exception):
            resolver = resolver.in_subresource(spec.create_resource(node))
    for keyword in _REF_KEYWORDS:
        ref = node.get(keyword)
        if not isinstance(ref, str):
            continue
        try:
            target = resolver.lookup(ref).contents
        # A pointer through a list or a value (`#/anyOf/x`, `#/type/0`) raises
        # ValueError or TypeError, not Unresolvable.
        except (Unresolvable, ValueError, TypeError, LookupError):
            raise UserError(
                f"{where}{at}[{keyword!r}] {ref!r} does not resolve within the schema"
                " (only the schema's own definitions are read; nothing is fetched)"
            ) from None
        if not isinstance(target, dict | bool):  # `#/properties/x/enum`: the check would raise
            raise UserError(f"{where}{at}[{keyword!r}] {ref!r} points to {json_type(target)}, not a schema")
    for key, value in node.items():
        if key not in _DATA_KEYWORDS:
            _refs_resolve(value, spec, resolver, where, f"{at}[{key!r}]")


def _name(obj: Mapping[str, Any], where: str, *, required: bool) -> str:
    name = obj.get("name")
    if name is None and not required:
        return ""
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}.name is required: a string naming the schema")
    return name


def _strict(obj: Mapping[str, Any], where: str) -> bool:
    strict = obj.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise UserError(f"{where}.strict must be true or false, not {json_type(strict)}")
    return bool(strict)


def _strict_schema(schema: dict[str, Any], strict: bool, where: str) -> dict[str, Any]:
    """OpenAI's strict mode holds an answer to an object schema (its root
    `"type": "object"`): a strict scalar, array or `anyOf` root is refused
    by OpenAI, so here too, before any seat is asked. A root that is a
    local `$ref` is read where it points (`{"$ref": "#/$defs/Node"}`)."""
    ref = schema.get("$ref")
    if strict and "type" not in schema and isinstance(ref, str) and ref.startswith("#/"):
        target: Any = schema
        for part in ref[2:].split("/"):
            target = (
                target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
            )
        if isinstance(target, dict) and target.get("type") == "object":
            return schema
    if strict and schema.get("type") != "object":
        raise UserError(
            f'{where}.schema must be an object schema ("type": "object") when strict is true,'
            f" not {json.dumps(schema.get('type'))}"
        )
    return schema


def chat_response_format(value: object) -> OutputFormat | None:
    """OpenAI chat's `response_format`: `{"type": "text"}` (none),
    `{"type": "json_object"}`, or `{"type": "json_schema", "json_schema":
    {"name", "schema", "strict"?, "description"?}}`."""
    if value is None:
        return None
    obj = require_object(value, "response_format")
    kind = obj.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return JSON_OBJECT
    if kind == "json_schema":
        spec = require_object(obj.get("json_schema"), "response_format.json_schema")
        where = "response_format.json_schema"
        strict = _strict(spec, where)
        return OutputFormat(
            "json_schema",
            _strict_schema(_schema(spec.get("schema", {}), f"{where}.schema"), strict, where),
            _name(spec, where, required=True),
            strict,
        )
    raise UserError(f"response_format.type must be text, json_object or json_schema, not {kind!r}")


def responses_text_format(value: object) -> OutputFormat | None:
    """Responses' `text.format`: `{"type": "text"}`, `{"type":
    "json_object"}`, or `{"type": "json_schema", "name", "schema", "strict"?}`."""
    if value is None:
        return None
    obj = require_object(value, "text.format")
    kind = obj.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return JSON_OBJECT
    if kind == "json_schema":
        strict = _strict(obj, "text.format")
        return OutputFormat(
            "json_schema",
            _strict_schema(_schema(obj.get("schema"), "text.format.schema"), strict, "text.format"),
            _name(obj, "text.format", required=True),
            strict,
        )
    raise UserError(f"text.format.type must be text, json_object or json_schema, not {kind!r}")


def anthropic_output_format(value: object, where: str) -> OutputFormat | None:
    """Anthropic's `output_config.format` (or the beta's `output_format`):
    `{"type": "json_schema", "schema"}`. `strict` stays False here and for
    Gemini and Ollama: it is OpenAI's own mode (a schema held to its
    subset), asked only by a caller who spoke OpenAI's API."""
    if value is None:
        return None
    obj = require_object(value, where)
    kind = obj.get("type")
    if kind != "json_schema":
        raise UserError(f"{where}.type must be json_schema, not {kind!r}")
    return OutputFormat("json_schema", _schema(obj.get("schema"), f"{where}.schema"))


def gemini_output(mime: object, schema: object, json_schema: object) -> OutputFormat | None:
    """Gemini's `responseMimeType` with `responseSchema` (OpenAPI's subset,
    read into JSON Schema) or `responseJsonSchema`. A schema needs the JSON
    mime type, as Gemini itself says."""
    where = "generationConfig."
    if mime not in (None, "text/plain", JSON_MIME):
        raise UserError(f"{where}responseMimeType {mime!r}: a panel answers with text/plain or {JSON_MIME}")
    if schema is not None and json_schema is not None:
        raise UserError(f"{where}responseSchema and responseJsonSchema: send one of them")
    given = schema if schema is not None else json_schema
    if mime != JSON_MIME:
        if given is not None:
            raise UserError(f"{where}responseSchema needs responseMimeType {JSON_MIME!r}")
        return None
    if given is None:
        return JSON_OBJECT
    if json_schema is not None:
        return OutputFormat("json_schema", _schema(json_schema, f"{where}responseJsonSchema"))
    converted = openapi_to_json_schema(require_object(schema, f"{where}responseSchema"))
    return OutputFormat("json_schema", _schema(converted, f"{where}responseSchema"))


def ollama_format(value: object) -> OutputFormat | None:
    """Ollama's `format`: "json", or a JSON Schema object."""
    if value in (None, ""):
        return None
    if value == "json":
        return JSON_OBJECT
    if isinstance(value, Mapping):
        return OutputFormat("json_schema", _schema(value, "format"))
    raise UserError(f'format must be "json" or a JSON Schema object, not {json.dumps(value)[:80]}')


def openapi_to_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Gemini's `responseSchema` (OpenAPI 3.0's subset: `"type": "OBJECT"`,
    `nullable`, `propertyOrdering`) as the JSON Schema every seat's answer
    is checked against and every other API is sent: keys in camel case (the
    SDK writes `additional_properties`), types in lower case,
    `nullable` as a type that allows null, the ordering hint dropped, the
    counts Gemini's REST reference types int64 (`minItems`, `maxLength`...)
    as numbers when sent as its JSON mapping's strings (`"1"`, as the JS SDK
    types them), the rest (`properties`, `items`, `anyOf`, `enum`,
    `required`, bounds) as JSON Schema spells them already."""
    out: dict[str, Any] = {}
    for snake, value in schema.items():
        key = _camel(snake)  # google-genai sends its Schema's keys in snake case
        if key in ("nullable", "propertyOrdering"):
            continue
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _nested(v) for k, v in value.items()}
        elif key == "items":
            out[key] = _nested(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [_nested(v) for v in value]
        elif key in _INT64_COUNTS and isinstance(value, str) and value.isascii() and value.isdigit():
            out[key] = int(value)
        else:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


# The counts of Gemini's Schema that are int64, which proto3's JSON writes as strings.
_INT64_COUNTS = frozenset(
    ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _nested(value: object) -> object:
    return openapi_to_json_schema(value) if isinstance(value, Mapping) else value
