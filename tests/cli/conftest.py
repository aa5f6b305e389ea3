"""Fixtures for the CLI's tests: the commands run against the same live
servers the panel's tests start (`panel_server`), and fake models that
answer the onboarding probes (`add_fake`, root conftest)."""

from tests.panel.conftest import panel_server  # noqa: F401
