"""Test support: a fake provider speaking the four APIs over real HTTP.

    from benchwarmers.testing import FakeModel, FakeProvider

See `fake_provider.py` for the server, `script.py` for what a model can be
scripted to do, and `pytest_plugin.py` for fixtures.
"""

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import (
    SCHEMA_EXAMPLE,
    FakeError,
    FakeMessage,
    FakeModel,
    FakeRequest,
    FakeToolCall,
    RateLimit,
    count_tokens,
    schema_example,
)

__all__ = [
    "SCHEMA_EXAMPLE",
    "FakeError",
    "FakeMessage",
    "FakeModel",
    "FakeProvider",
    "FakeRequest",
    "FakeToolCall",
    "RateLimit",
    "count_tokens",
    "schema_example",
]
