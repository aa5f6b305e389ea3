"""The hot lane (`server/hot.py`): a route marked `@hot` is served ahead of
FastAPI's stack, and keeps everything the stack gave it: the guard, errors
in the caller's format, CatchAll's 500, the metrics under the route's
template, FastAPI's 405 for a method it does not take, `/openapi.json`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from benchwarmers import metrics
from benchwarmers.errors import Refused, UserError
from benchwarmers.server.access import gateway, public
from benchwarmers.server.app import create_app
from benchwarmers.server.deps import identity_of
from benchwarmers.server.hot import hot
from benchwarmers.server.routes import health
from benchwarmers.testing.live_server import LiveServer

from .conftest import new_key

ROUTERS = (health.router,)
lane = APIRouter()


@lane.post("/v1/probe/hot/{name}")
@hot
@gateway
async def hot_probe(request: Request, name: str) -> Response:
    if name == "refuse":
        raise Refused("no, not this one", status=403)
    if name == "wrong":
        raise UserError("the probe's caller got it wrong")
    if name == "bug":
        raise RuntimeError("a bug of ours")
    return JSONResponse(
        {
            "name": name,
            # FastAPI's request_response puts its exit stacks in the scope: the hot lane does not.
            "via_fastapi": "fastapi_inner_astack" in request.scope,
            "identity": identity_of(request).name,
            "body": (await request.json()) if await request.body() else None,
        }
    )


@lane.post("/v1/probe/cold")
@gateway
async def cold_probe(request: Request) -> Response:
    return JSONResponse({"via_fastapi": "fastapi_inner_astack" in request.scope})


@pytest.fixture
def lane_server(home: Path) -> Iterator[LiveServer]:
    server = LiveServer(home, routers=ROUTERS, extra_routers=[lane]).start()
    yield server
    server.stop()


def test_a_hot_route_skips_fastapi_and_a_cold_one_does_not(lane_server: LiveServer) -> None:
    hot_reply = httpx.post(f"{lane_server.url}/v1/probe/hot/plain", json={"x": [1, 2]})
    assert hot_reply.status_code == 200
    expected = {"name": "plain", "via_fastapi": False, "identity": "owner", "body": {"x": [1, 2]}}
    assert hot_reply.json() == expected
    cold_reply = httpx.post(f"{lane_server.url}/v1/probe/cold", json={})
    assert cold_reply.status_code == 200 and cold_reply.json() == {"via_fastapi": True}


def test_errors_keep_the_callers_format_and_status(lane_server: LiveServer) -> None:
    refused = httpx.post(f"{lane_server.url}/v1/probe/hot/refuse")
    assert refused.status_code == 403 and refused.json()["error"]["message"] == "no, not this one"
    wrong = httpx.post(f"{lane_server.url}/v1/probe/hot/wrong")
    assert wrong.status_code == 400 and "got it wrong" in wrong.json()["error"]["message"]
    bug = httpx.post(f"{lane_server.url}/v1/probe/hot/bug")
    assert bug.status_code == 500
    message = bug.json()["error"]["message"]
    assert message.startswith("internal error ") and "a bug of ours" not in message
    # A method the route does not take is FastAPI's 405, in the caller's format.
    not_allowed = httpx.get(f"{lane_server.url}/v1/probe/hot/plain")
    assert not_allowed.status_code == 405 and "GET is not allowed" in not_allowed.json()["error"]["message"]


def test_the_guard_still_stands_in_front(home: Path) -> None:
    server = LiveServer(home, acting_as="0.0.0.0", routers=ROUTERS, extra_routers=[lane]).start()
    try:
        url = f"{server.url}/v1/probe/hot/plain"
        assert httpx.post(url).status_code == 401
        assert httpx.post(url, headers={"host": "evil.example"}).status_code == 421
        key = new_key(home, "lane")
        reply = httpx.post(url, headers={"authorization": f"Bearer {key}"})
        assert reply.status_code == 200 and reply.json()["identity"] == "lane"
    finally:
        server.stop()


def test_replies_are_counted_under_the_routes_template(lane_server: LiveServer) -> None:
    counter = metrics.REQUESTS.labels("/v1/probe/hot/{name}", "openai_chat", "200")
    before = counter._value.get()
    for name in ("a", "b"):
        assert httpx.post(f"{lane_server.url}/v1/probe/hot/{name}").status_code == 200
    assert counter._value.get() == before + 2


def test_hot_routes_stay_in_the_schema(lane_server: LiveServer) -> None:
    paths = httpx.get(f"{lane_server.url}/openapi.json").json()["paths"]
    assert "post" in paths["/v1/probe/hot/{name}"]


def test_a_hot_endpoint_that_needs_fastapi_is_refused_at_build() -> None:
    needy = APIRouter()

    @needy.post("/v1/probe/needy")
    @hot
    async def with_query(request: Request, limit: int = 3) -> Response:
        return JSONResponse({"limit": limit})

    with pytest.raises(TypeError, match="marked @hot"):
        create_app(lambda: None, routers=[needy])  # type: ignore[arg-type, return-value]


def test_a_hot_endpoint_not_declared_for_gateway_keys_is_refused_at_build() -> None:
    open_lane = APIRouter()

    @open_lane.post("/v1/probe/open")
    @public
    @hot
    async def open_probe(request: Request) -> Response:
        return JSONResponse({})

    with pytest.raises(TypeError, match="not declared @gateway"):
        create_app(lambda: None, routers=[open_lane])  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (200, None),
        (201, {"X-Bench-Call": "c_1", "x-bench-member": "alpha"}),
        (200, {}),
        (204, None),
        (200, {"Content-Type": "application/problem+json"}),
        (200, {"content-length": "99"}),
    ],
)
def test_a_json_reply_has_starlettes_head_and_orjsons_body(
    status: int, headers: dict[str, str] | None
) -> None:
    """The model routes' `JSONResponse` makes its head itself: the same
    headers, in the same order, as Starlette's would; its body is orjson's."""
    from starlette.responses import JSONResponse as StarletteJSONResponse

    from benchwarmers import jsontext
    from benchwarmers.server.json_response import JSONResponse as Ours

    content = {"answer": "é", "n": [1, 2.5, None]}
    ours, theirs = Ours(content, status, headers), StarletteJSONResponse(content, status, headers)
    assert (ours.status_code, ours.raw_headers) == (theirs.status_code, theirs.raw_headers)
    assert ours.body == jsontext.dumps(content)
