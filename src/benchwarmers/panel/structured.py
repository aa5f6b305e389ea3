"""Who is asked for structured output how: natively, in the prompt, or not at all.

A model's `structured_output` (the catalog's word, or the user's) says
whether its API's own JSON setting works for it. Unknown (None, most
models) counts as yes: all four APIs we call take the setting
(`response_format`, `output_config.format`, `responseJsonSchema`,
`format`), and a model that refuses it fails its own seat, visibly, not
the panel. A model known not to (False) is, by its collection's
`output_fallback`, left off with a reason starting "no structured
output:" (`leave_off`, the default), or asked with the schema in its
system prompt instead (`prompt`). Either way every answer is checked the
same (`output_check.py`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchwarmers.providers.structured_output import output_instruction
from benchwarmers.types import Request

NO_OUTPUT = "no structured output: "
PROMPT_FALLBACK = "prompt"
PROMPTED_NOTE = "asked for JSON in its system prompt (it has no structured output of its own)"


def native(model: Any) -> bool:
    """Whether the model is asked in its API's own JSON setting (unknown: yes)."""
    return getattr(model, "structured_output", None) is not False


def no_output_reason(model: Any, request: Request) -> str:
    """Why a model cannot answer this request's structured output natively; "" when it can."""
    if request.output is None or native(model):
        return ""
    return NO_OUTPUT + "marked as not answering in JSON when its API is asked to"


def for_seating(request: Request, fallback: str) -> Request:
    """The request seating judges: under the prompt fallback every model can
    answer the structured output (in its prompt), so seating does not see it."""
    return replace(request, output=None) if fallback == PROMPT_FALLBACK and request.output else request


def as_asked(request: Request, model: Any) -> tuple[Request, str]:
    """The request as this model is sent it, and the seat's note when the
    format went into its system prompt instead of its API's setting."""
    if request.output is None or native(model):
        return request, ""
    return prompted(request), PROMPTED_NOTE


def prompted(request: Request) -> Request:
    """The request with the output format as words in the system prompt."""
    assert request.output is not None
    instruction = output_instruction(request.output)
    system = f"{request.system}\n\n{instruction}" if request.system else instruction
    return replace(request, system=system, output=None)
