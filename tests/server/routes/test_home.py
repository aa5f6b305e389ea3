"""`GET /` and `HEAD /` before the dashboard exists: a short page saying
what is served where, and a 200 for Claude Code's `HEAD /` on start
(it took a bare JSON 404 for a wrong base URL)."""

from __future__ import annotations

import httpx

from benchwarmers import __version__


def test_the_root_is_a_short_page_and_head_is_200(client: httpx.Client) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for served in ("/v1/chat/completions", "/v1/responses", "/v1/messages", ":generateContent", "/api/chat"):
        assert served in page.text
    assert "/mcp" in page.text and __version__ in page.text and ":route" in page.text
    head = client.head("/")
    assert head.status_code == 200 and head.content == b""
    assert client.post("/", json={}).status_code == 405
