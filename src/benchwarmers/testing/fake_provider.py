"""A fake provider speaking all four APIs over real HTTP on loopback.

Tests (and `benchwarmers fake-provider`) run it instead of a real provider:
it serves each scripted `FakeModel` on every API at once, so one fake can
stand behind an `openai`, an `anthropic`, a `gemini` and an `ollama`
endpoint. It is a real server in a background thread (uvicorn on port 0),
never a mock, so what is tested is the bytes on the wire.

    with FakeProvider([FakeModel("m1", answer="hello")]) as fake:
        target = Target("fake", "openai", fake.openai_base, "m1", key=None)
        ...
        assert fake.calls["m1"] == 1
        assert fake.last("m1").prompt == "hi"

Routes: OpenAI `POST /v1/chat/completions`, `GET /v1/models`; Anthropic
`POST /v1/messages`, `GET /v1/models` (told apart by the
`anthropic-version` header); Gemini `POST /v1beta/models/{id}:generateContent`
and `:streamGenerateContent?alt=sse` (also under `/v1`), `GET /v1beta/models`; Ollama
`POST /api/chat`, `GET /api/tags`, `GET /api/version`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from benchwarmers.server.run import bind_socket
from benchwarmers.testing.prompt_server import PromptServer
from benchwarmers.testing.script import FakeModel, FakeRequest, count_tokens
from benchwarmers.testing.wire import (
    FakeReply,
    Frame,
    error_body,
    filler_frame,
    malformed_frame,
    pieces,
    read_request,
    reply_body,
    stream_error_frame,
    stream_frames,
)
from benchwarmers.types import ApiKind

MEDIA = {"ollama": "application/x-ndjson"}


class StreamAborted(Exception):
    """Raised inside a stream to break the connection (`cut_mode="abort"`)."""


class FakeProvider:
    def __init__(
        self, models: Iterable[FakeModel] = (), *, key: str | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.models: dict[str, FakeModel] = {m.served: m for m in models}
        self.key = key
        self.host = host
        self.port = 0
        self.calls: Counter[str] = Counter()
        self.calls_by_api: Counter[tuple[str, str]] = Counter()
        self.requests: list[FakeRequest] = []
        # ("asked" | "answered" | "closed", served) in the order they happened
        # ("closed": the caller hung up mid-stream): tests assert concurrency,
        # streaming and stops by order of events, never by clock.
        self.timeline: list[tuple[str, str]] = []
        # Token usage the fake reported, per served id: what a ledger should sum to.
        self.reported: dict[str, list[int]] = {}
        self._lock = threading.Lock()
        self._server: PromptServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # ------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base(self) -> str:
        return self.url + "/v1"

    def base_for(self, api: ApiKind | str) -> str:
        return self.openai_base if api == "openai" else self.url

    def start(self) -> FakeProvider:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", access_log=False, lifespan="off")
        self._server = PromptServer(config)
        self._stopping.clear()
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the fake provider did not start on {self.url}")
            self._stopping.wait(0.01)
        return self

    def listen(self, port: int) -> socket.socket:
        """The socket `serve_forever` serves on, bound before anything is
        said: a port in use is one clear `UserError`, as `serve` says it."""
        sock = bind_socket(self.host, port)
        self.port = sock.getsockname()[1]
        return sock

    def serve_forever(self, sock: socket.socket) -> None:
        """Run in the foreground on a socket from `listen` (the CLI)."""
        # No access log: Gemini clients may put a key in the query string.
        config = uvicorn.Config(self.app(), log_level="info", access_log=False, lifespan="off")
        uvicorn.Server(config).run(sockets=[sock])

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.force_exit = True
            self._server.stop_now()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --------------------------------------------------------------- script

    def add(self, model: FakeModel) -> FakeModel:
        self.models[model.served] = model
        return model

    def hide(self, served: str, api: ApiKind | None = None) -> None:
        """Take a model off the model list (of one API, or all), as when a
        provider stops offering it; calls to it still work."""
        model = self.models[served]
        model.listed = set() if api is None else model.listed - {api}

    def remove(self, served: str) -> None:
        """Forget a model: it leaves every list and calls to it get a 404."""
        self.models.pop(served, None)

    def last(self, served: str) -> FakeRequest:
        """The last request a model received."""
        with self._lock:
            for request in reversed(self.requests):
                if request.model == served:
                    return request
        raise KeyError(f"{served} received no request")

    def reset_counts(self) -> None:
        with self._lock:
            self.calls.clear()
            self.calls_by_api.clear()
            self.requests.clear()
            self.reported.clear()
            self.timeline.clear()

    # --------------------------------------------------------------- server

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai_chat, methods=["POST"]),
                Route("/v1/messages", self._anthropic_messages, methods=["POST"]),
                Route("/v1/models", self._v1_models, methods=["GET"]),
                Route("/v1beta/models", self._gemini_models, methods=["GET"]),
                Route("/v1beta/models/{rest:path}", self._gemini_generate, methods=["POST"]),
                # google-genai uses v1 when given a custom base URL.
                Route("/v1/models/{rest:path}", self._gemini_generate, methods=["POST"]),
                Route("/api/chat", self._ollama_chat, methods=["POST"]),
                Route("/api/tags", self._ollama_tags, methods=["GET"]),
                Route("/api/version", self._ollama_version, methods=["GET"]),
            ]
        )

    async def _openai_chat(self, request: Request) -> Response:
        return await self._answer("openai", request, model_from_body=True)

    async def _anthropic_messages(self, request: Request) -> Response:
        return await self._answer("anthropic", request, model_from_body=True)

    async def _ollama_chat(self, request: Request) -> Response:
        return await self._answer("ollama", request, model_from_body=True)

    async def _gemini_generate(self, request: Request) -> Response:
        model, _, method = request.path_params["rest"].rpartition(":")
        if method not in ("generateContent", "streamGenerateContent"):
            return JSONResponse(error_body("gemini", 404, f"unknown method {method!r}"), status_code=404)
        return await self._answer("gemini", request, served=model, stream=method == "streamGenerateContent")

    async def _v1_models(self, request: Request) -> Response:
        if "anthropic-version" in request.headers:
            refused = self._refuse_key("anthropic", request)
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                for m in self._listed("anthropic")
            ]
            return refused or JSONResponse(
                {
                    "data": data,
                    "has_more": False,
                    "first_id": data[0]["id"] if data else None,
                    "last_id": None,
                }
            )
        refused = self._refuse_key("openai", request)
        models = [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self._listed("openai")
        ]
        return refused or JSONResponse({"object": "list", "data": models})

    async def _gemini_models(self, request: Request) -> Response:
        models = [
            {
                "name": f"models/{m}",
                "displayName": m,
                "supportedGenerationMethods": ["generateContent", "streamGenerateContent"],
            }
            for m in self._listed("gemini")
        ]
        return self._refuse_key("gemini", request) or JSONResponse({"models": models})

    async def _ollama_tags(self, request: Request) -> Response:
        models = [{"name": m, "model": m, "size": 0, "details": {}} for m in self._listed("ollama")]
        return self._refuse_key("ollama", request) or JSONResponse({"models": models})

    async def _ollama_version(self, _: Request) -> Response:
        return JSONResponse({"version": "0.0.0-fake"})

    def _listed(self, api: ApiKind) -> list[str]:
        return [served for served, model in self.models.items() if api in model.listed]

    def _refuse_key(self, api: ApiKind, request: Request) -> Response | None:
        if self.key is None:
            return None
        given = {
            "openai": request.headers.get("authorization", "").removeprefix("Bearer "),
            "ollama": request.headers.get("authorization", "").removeprefix("Bearer "),
            "anthropic": request.headers.get("x-api-key", ""),
            "gemini": request.headers.get("x-goog-api-key") or request.query_params.get("key", ""),
        }[api]
        if given == self.key:
            return None
        # As real providers do, the refusal quotes the key it was sent: what the
        # gateway must never pass on (providers/base.py `scrubbed`).
        return JSONResponse(error_body(api, 401, f"invalid API key: {given}"), status_code=401)

    # ------------------------------------------------------------ answering

    async def _answer(
        self,
        api: ApiKind,
        request: Request,
        *,
        model_from_body: bool = False,
        served: str = "",
        stream: bool | None = None,
    ) -> Response:
        try:
            body = json.loads(await request.body())
        except ClientDisconnect:
            return Response(status_code=499)  # the caller gave up while sending: nobody to answer
        except ValueError:
            return JSONResponse(error_body(api, 400, "the request body is not JSON"), status_code=400)
        refused = self._refuse_key(api, request)
        if refused:
            return refused
        if model_from_body:
            served = str(body.get("model", ""))
        if stream is None:
            # Ollama streams unless told not to; the others only when asked.
            stream = bool(body.get("stream", api == "ollama"))
        model = self.models.get(served)
        if model is None:
            return JSONResponse(error_body(api, 404, f"model {served!r} not found"), status_code=404)
        asked_stream = stream
        stream = stream or model.stream_always
        try:
            asked = read_request(api, served, asked_stream, body, dict(request.headers))
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            message = f"malformed request: {type(error).__name__}: {error}"
            return JSONResponse(error_body(api, 400, message), status_code=400)
        with self._lock:
            self.calls[served] += 1
            self.calls_by_api[(api, served)] += 1
            self.requests.append(asked)
            self.timeline.append(("asked", served))
            number = self.calls[served]
        faulty = model.faulty(number)
        if model.ttfb:
            await asyncio.sleep(model.ttfb)
        # Read once: a test may release the hold and drop it (None) while this waits.
        if (hold := model.hold) is not None and not (stream and model.hold_after is not None):
            await self._held(hold)
        if faulty and model.error:
            return JSONResponse(
                error_body(api, model.error.status, model.error.message), status_code=model.error.status
            )
        if faulty and model.rate_limit:
            limit = model.rate_limit
            retry = limit.retry if limit.style in ("gemini", "gemini-details") else None
            return JSONResponse(
                error_body(api, 429, limit.message(), retry=retry), status_code=429, headers=limit.headers()
            )
        try:
            reply = self._reply(model, asked)
        except Exception as error:  # a test's answer function failed: say so in the reply
            return JSONResponse(error_body(api, 500, f"the script failed: {error!r}"), status_code=500)
        if not stream:
            return await self._whole(api, model, reply, faulty)
        # A stream nobody asked for could not ask for its usage: it carries it.
        include_usage = (
            api != "openai"
            or not asked_stream
            or bool((body.get("stream_options") or {}).get("include_usage"))
        )
        frames = stream_frames(api, served, reply, include_usage=include_usage)
        return StreamingResponse(
            self._stream(api, model, reply, frames, faulty),
            media_type=MEDIA.get(api, "text/event-stream"),
            headers=model.headers,
        )

    def _reply(self, model: FakeModel, asked: FakeRequest) -> FakeReply:
        calls = model.calls_for(asked)
        if calls:
            prefix = "toolu_" if asked.api == "anthropic" else "call_"
            made = [(c.id or prefix + uuid.uuid4().hex[:16], c.name, json.dumps(c.arguments)) for c in calls]
            output = sum(count_tokens(arguments) for _, _, arguments in made)
            return FakeReply("", made, "tool_calls", asked.input_tokens, output)
        text, thinking = model.written(model.text_for(asked))
        finish = "stop"
        limit = model.output_limit(asked)
        if limit is not None and count_tokens(text) > limit:
            text, finish = "".join(pieces(text)[:limit]).rstrip(), "length"
        return FakeReply(text, [], finish, asked.input_tokens, count_tokens(text), thinking)

    def _report(self, served: str, reply: FakeReply) -> None:
        with self._lock:
            self.timeline.append(("answered", served))
            totals = self.reported.setdefault(served, [0, 0])
            totals[0] += reply.input_tokens
            totals[1] += reply.output_tokens

    async def _whole(self, api: ApiKind, model: FakeModel, reply: FakeReply, faulty: bool) -> Response:
        if model.never_ending and faulty:
            await self._wait_for_stop()
        rest = max(0.0, model.latency - model.ttfb)
        if rest:
            await asyncio.sleep(rest)
        if faulty and model.malformed_json:
            text = json.dumps(reply_body(api, model.served, reply))
            return Response(text[: len(text) // 2], media_type="application/json", headers=model.headers)
        self._report(model.served, reply)
        return JSONResponse(reply_body(api, model.served, reply), headers=model.headers)

    async def _stream(
        self, api: ApiKind, model: FakeModel, reply: FakeReply, frames: list[Frame], faulty: bool
    ) -> AsyncIterator[bytes]:
        try:
            async for data in self._frames(api, model, reply, frames, faulty):
                yield data
        except (GeneratorExit, asyncio.CancelledError):  # the caller hung up before the end
            with self._lock:
                self.timeline.append(("closed", model.served))
            raise

    async def _frames(
        self, api: ApiKind, model: FakeModel, reply: FakeReply, frames: list[Frame], faulty: bool
    ) -> AsyncIterator[bytes]:
        content_count = sum(1 for f in frames if f.content) or 1
        rest = max(0.0, model.latency - model.ttfb)
        gap = 1 / model.tokens_per_second if model.tokens_per_second else rest / content_count
        # The pieces go out one `gap` apart from the first byte on; whatever of
        # `latency` that leaves (one piece, a single tool call, no content at
        # all) is spent before the end marker, so every reply shape takes it.
        ends_at = asyncio.get_running_loop().time() + rest
        sent = 0
        for number, frame in enumerate(frames, start=1):
            if faulty and model.cut_after is not None and frame.content and sent >= model.cut_after:
                if model.cut_mode == "abort":
                    raise StreamAborted("the fake model broke the stream on purpose")
                if model.cut_mode == "error":
                    yield stream_error_frame(api, "the model is overloaded").data
                return
            if frame.content:
                if sent and gap:
                    await asyncio.sleep(gap)
                if model.hold is not None and model.hold_after is not None and sent == model.hold_after:
                    await self._held(model.hold)
                sent += 1
            if faulty and model.never_ending and not frame.content and sent:
                # Past the content: never get to the end, keep talking.
                while not self._stopping.is_set():
                    yield filler_frame(api, model.served).data
                    await asyncio.sleep(max(gap, 0.05))
                return
            if number == len(frames):
                await _sleep_until(ends_at)
            yield frame.data
            if faulty and model.malformed_json and frame.content:
                yield malformed_frame(api).data
        self._report(model.served, reply)

    async def _held(self, hold: threading.Event) -> None:
        """Until the test sets `hold` (or this fake stops)."""
        while not hold.is_set() and not self._stopping.is_set():
            await asyncio.sleep(0.01)

    async def _wait_for_stop(self) -> None:
        """Hang, as a stuck provider does, until this fake is stopped."""
        while not self._stopping.is_set():
            await asyncio.sleep(0.05)


async def _sleep_until(when: float) -> None:
    """Sleep until the running loop's clock reads `when` (not at all if it has)."""
    loop = asyncio.get_running_loop()
    if when > loop.time():
        await asyncio.sleep(when - loop.time())
