"""The onboarding input, read once in core for the HTTP API and the dashboard."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.core import onboard_requests
from benchwarmers.errors import UserError

pytestmark = pytest.mark.unit


def test_served_ids_objects_and_a_forms_text_are_read_alike() -> None:
    (plain,) = onboard_requests({"endpoint": "hub", "models": ["m1"]})
    assert (plain.endpoint, plain.served, plain.mode, plain.alias, plain.role) == (
        "hub",
        "m1",
        "full",
        "",
        "",
    )
    (given,) = onboard_requests(
        {"endpoint": "hub", "models": [{"served": "m2", "alias": "two", "role": "code"}], "mode": "quick"}
    )
    assert (given.served, given.alias, given.role, given.mode) == ("m2", "two", "code", "quick")
    assert [r.served for r in onboard_requests({"endpoint": "hub", "models": "a, b c"})] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (["not", "an", "object"], ""),
        ({"models": ["m"]}, "endpoint"),
        ({"endpoint": " ", "models": ["m"]}, "endpoint"),
        ({"endpoint": "hub", "models": []}, "models"),
        ({"endpoint": "hub", "models": [3]}, "models"),
        ({"endpoint": "hub", "models": [{"alias": "no served"}]}, "models"),
        ({"endpoint": "hub", "models": [{"served": "m", "role": 1}]}, "models"),
        ({"endpoint": "hub", "models": ["m"], "mode": "fast"}, "mode"),
    ],
)
def test_a_refusal_names_its_field(body: Any, field: str) -> None:
    with pytest.raises(UserError) as refused:
        onboard_requests(body)
    assert refused.value.status == 400 and refused.value.field == field
