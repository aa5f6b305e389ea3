"""The fake provider's fixtures, as any test module would use them."""

from benchwarmers.testing.pytest_plugin import fake_provider, fake_provider_server  # noqa: F401
