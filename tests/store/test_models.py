"""The models' rules: one alias each, a served id once per endpoint, a
status that says why (resting until when), views that carry their endpoint."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store.models import add_model, get_model, list_models, restore, retire, set_role, set_status


async def test_model_views_carry_their_endpoint(bench: Runtime) -> None:
    model = await get_model(bench.store, "beta")
    assert (model.endpoint.name, model.endpoint.base_url, model.served, model.role) == (
        "hub",
        "https://hub.example/v1",
        "vendor/beta",
        "code",
    )
    assert model.status == "available"
    assert [m.alias for m in await list_models(bench.store, endpoint="hub")] == ["alpha", "beta"]


async def test_model_errors(bench: Runtime) -> None:
    with pytest.raises(Conflict, match="alias 'alpha' is already"):
        await add_model(bench.store, "alpha", "hub", "vendor/other")
    with pytest.raises(Conflict, match="already on the bench as 'alpha'"):
        await add_model(bench.store, "alpha-2", "hub", "vendor/alpha")
    with pytest.raises(NotFound, match="no endpoint named 'nowhere'"):
        await add_model(bench.store, "gamma", "nowhere", "vendor/gamma")
    with pytest.raises(UserError, match="role 'boss'"):
        await add_model(bench.store, "gamma", "hub", "vendor/gamma", role="boss")
    with pytest.raises(UserError, match="served model id"):
        await add_model(bench.store, "gamma", "hub", "has space")
    with pytest.raises(NotFound):
        await retire(bench.store, "nobody")


async def test_retire_restore_and_role(bench: Runtime) -> None:
    retired = await retire(bench.store, "alpha", "stopped answering")
    assert (retired.status, retired.status_reason) == ("retired", "stopped answering")
    assert [m.alias for m in await list_models(bench.store, include_retired=False)] == ["beta"]
    restored = await restore(bench.store, "alpha")
    assert restored.status == "available"
    vision = await set_role(bench.store, "alpha", "vision")
    assert (vision.role, vision.vision) == ("vision", True)
    with pytest.raises(UserError):
        await set_role(bench.store, "alpha", "boss")


async def test_resting_needs_an_end(bench: Runtime) -> None:
    with pytest.raises(UserError, match="rests until"):
        await set_status(bench.store, "alpha", "resting")
    until = datetime.now(UTC) + timedelta(minutes=5)
    resting = await set_status(bench.store, "alpha", "resting", reason="429", resting_until=until)
    assert resting.resting_until == until
    assert (await restore(bench.store, "alpha")).resting_until is None


@pytest.mark.parametrize(
    "alias", ["a/../b", "a/..", "x/./y", "a//b", "a/", "a b", "a?b", "a#b", "a%2Fb", "ü"]
)
async def test_an_alias_that_would_change_an_address_is_refused_saying_the_rule(
    bench: Runtime, alias: str
) -> None:
    """An alias goes in addresses (`/models/<alias>`, the Bench page's buttons): a `.` or `..`
    part, an empty one, or a character that means something in a URL is refused, the rule said."""
    with pytest.raises(UserError, match=r"each part between slashes a name \(not empty, \. or \.\.\)"):
        await add_model(bench.store, alias, "hub", "vendor/gamma")


async def test_aliases_with_slashes_dots_and_colons_are_still_taken(bench: Runtime) -> None:
    for n, alias in enumerate(("openrouter/meta-llama/llama-3.1-8b:free", "a.b/c..d", "x/...y")):
        assert (await add_model(bench.store, alias, "hub", f"vendor/m{n}")).alias == alias
