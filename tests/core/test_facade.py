"""The core's façade (`benchwarmers.core`) hands front ends its own services,
views and errors: never the `Runtime` (a front end holds a `CoreHandle` or a
`Core`) and never a store row, neither exported nor returned by a service."""

from __future__ import annotations

import inspect
import re

import pytest

import benchwarmers.core as core
from benchwarmers.runtime import Runtime
from benchwarmers.store.schema import Base

pytestmark = pytest.mark.unit

SERVICES = (core.Panels, core.RouteMode, core.Admin, core.Spend, core.Operations, core.Core, core.CoreHandle)


def test_the_facade_exports_no_runtime_and_no_store_row() -> None:
    exported = {name: getattr(core, name) for name in core.__all__}
    assert [name for name, value in exported.items() if value is Runtime] == []
    rows = [name for name, value in exported.items() if isinstance(value, type) and issubclass(value, Base)]
    assert rows == []


def test_no_service_hands_out_a_row_or_the_runtime() -> None:
    """Read off each public method's return annotation, word by word."""
    rows = {mapper.class_.__name__ for mapper in Base.registry.mappers}
    leaks = [
        f"{service.__name__}.{name} -> {returned}"
        for service in SERVICES
        for name, method in inspect.getmembers(service, inspect.isfunction)
        if not name.startswith("_")
        for returned in [str(inspect.signature(method).return_annotation)]
        if {"schema", "Runtime", *rows} & set(re.findall(r"\w+", returned))
    ]
    assert leaks == []
