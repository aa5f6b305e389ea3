"""Test support: a fake provider speaking the four APIs over real HTTP.

    from benchwarmers.testing import FakeModel, FakeProvider

See `fake_provider.py` for the server, `script.py` for what a model can be
scripted to do, and `pytest_plugin.py` for fixtures.

`FakeProvider` is imported on first use: it brings the whole server with it
(`server.run`, the runtime, SQLAlchemy), and every test process loads this
package through the pytest plugin, the xdist controller and the unit tier's
workers among them, which run no fake provider.
"""

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from benchwarmers.testing.fake_provider import FakeProvider

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


def __getattr__(name: str) -> object:
    if name == "FakeProvider":
        from benchwarmers.testing.fake_provider import FakeProvider

        return FakeProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
