"""`GET /` and `HEAD /`: a short page saying what this server serves where.

Until the dashboard is built this is what a person who opens the server's
address in a browser sees, and what Claude Code's `HEAD /` on start is
answered with (200, not a 404 that looks like a wrong base URL). The
dashboard replaces this router when it lands: this module is the whole of
it, one line in `routes/__init__.py`.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from benchwarmers import __version__

router = APIRouter()

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Benchwarmers</title></head>
<body>
<h1>Benchwarmers {version}</h1>
<p>A gateway that asks a panel of models at once. Name a collection as
<code>bench/&lt;collection&gt;</code> (every seat), <code>bench/&lt;collection&gt;:merged</code>
(one merged answer) or <code>bench/&lt;collection&gt;:route</code> (one member drives an agent).</p>
<ul>
<li>OpenAI: <code>/v1/chat/completions</code>, <code>/v1/responses</code>, <code>/v1/models</code></li>
<li>Anthropic: <code>/v1/messages</code>, <code>/v1/messages/count_tokens</code></li>
<li>Gemini: <code>/v1beta/models/{{model}}:generateContent</code>,
<code>:streamGenerateContent</code>, <code>/v1beta/models</code></li>
<li>Ollama: <code>/api/chat</code>, <code>/api/generate</code>, <code>/api/tags</code></li>
<li>Verdicts and records: <code>/bench/verdict</code>, <code>/bench/record</code>,
<code>/bench/pending</code></li>
<li>MCP (streamable HTTP): <code>/mcp</code></li>
<li>Health: <code>/healthz</code></li>
</ul>
<p>The dashboard is not built yet; <code>bench --help</code> runs everything from a terminal.</p>
</body></html>
"""


@router.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse, include_in_schema=False)
async def home() -> HTMLResponse:
    return HTMLResponse(_PAGE.format(version=__version__))
