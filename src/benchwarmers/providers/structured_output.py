"""Structured output as the provider APIs are sent it, where more than one needs it.

OpenAI's `response_format` (the openai adapter's), and the words that ask a
model for JSON in its system prompt (`output_instruction`): for a model
whose API has no setting for the kind asked (Anthropic has no plain JSON
mode), or a collection that prompts the models that cannot answer in JSON
natively (`panel/structured.py`). The other adapters spell their one
setting inline.
"""

from __future__ import annotations

import json
import re
from typing import Any

from benchwarmers.types import OutputFormat

DEFAULT_SCHEMA_NAME = "answer"
# What OpenAI takes as a schema's name (`^[a-zA-Z0-9_-]{1,64}$`); anything else is refused.
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_NAME_MOST = 64


def openai_response_format(output: OutputFormat) -> dict[str, Any]:
    """The format as OpenAI chat's `response_format` spells it (the openai
    adapter sends it; a schema needs a name there, "answer" when the caller
    gave none). The name is sent as OpenAI takes one: a caller of another
    API, or an SDK naming a generic model (`Page[Item]`), may give a name
    OpenAI would refuse, failing every OpenAI-compatible seat."""
    if output.kind == "json_object" or output.schema is None:
        return {"type": "json_object"}
    name = _NAME_CHARS.sub("_", output.name)[:_NAME_MOST] or DEFAULT_SCHEMA_NAME
    spec: dict[str, Any] = {"name": name, "schema": output.schema}
    if output.strict:
        spec["strict"] = True
    return {"type": "json_schema", "json_schema": spec}


def output_instruction(output: OutputFormat) -> str:
    """What a model is told in its system prompt when its API is not asked
    for the format natively: answer with JSON only, against this schema."""
    if output.kind == "json_object" or output.schema is None:
        return "Answer with one JSON object only: no prose, no code fence, nothing before or after it."
    schema = json.dumps(output.schema, ensure_ascii=False, separators=(",", ":"))
    named = f' named "{output.name}"' if output.name else ""
    return (
        "Answer with one JSON value only, valid against this JSON Schema"
        f"{named}: no prose, no code fence, nothing before or after it.\n\n{schema}"
    )
