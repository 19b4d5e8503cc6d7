"""A local HTTP server that speaks the Anthropic Messages and OpenAI chat-completions wire protocols.

Tests script its replies (one per request, in order) with provider-neutral blocks, and the real SDKs talk
to it over loopback: SSE exactly as the providers document it, error statuses with retry headers, streams
that stall or break mid-way. Every request body is kept for assertions.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

# ------------------------------------------------------------------------------------------ scripts


@dataclass
class Text:
    fragments: tuple[str, ...]

    def __init__(self, *fragments: str) -> None:
        self.fragments = fragments


@dataclass
class Thinking:
    fragments: tuple[str, ...]
    signature: str = "sig-abc"

    def __init__(self, *fragments: str, signature: str = "sig-abc") -> None:
        self.fragments = fragments
        self.signature = signature


@dataclass
class Call:
    id: str
    name: str
    fragments: tuple[str, ...]

    def __init__(self, id: str, name: str, *fragments: str) -> None:
        self.id = id
        self.name = name
        self.fragments = fragments


Block = Text | Thinking | Call


@dataclass
class Reply:
    """One scripted HTTP response: a stream of blocks, or an error status."""

    blocks: list[Block] = field(default_factory=list)
    status: int = 200
    error_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    hang_after: int | None = None  # stall after this many SSE events (the client must give up)
    error_after: int | None = None  # send a mid-stream error event after this many events
    usage: tuple[int, int, int, int] = (100, 20, 0, 0)  # input, output, cache_read, cache_write
    stop: str | None = None  # override the stop reason
    raw: list[Any] | None = None  # exact SSE data payloads (OpenAI form), for odd streams from compatible servers


def reply(*blocks: Block, **options: Any) -> Reply:
    return Reply(list(blocks), **options)


def error(status: int, error_type: str = "", **options: Any) -> Reply:
    return Reply([], status=status, error_type=error_type, **options)


# ------------------------------------------------------------------------------------------ encoders


def _sse(name: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return ((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode()


def anthropic_events(script: Reply, model: str) -> list[bytes]:
    inp, out, cache_read, cache_write = script.usage
    usage = {
        "input_tokens": inp,
        "output_tokens": 1,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events = [_sse("message_start", {"type": "message_start", "message": message}), _sse("ping", {"type": "ping"})]
    for index, block in enumerate(script.blocks):
        if isinstance(block, Text):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": f} for f in block.fragments]
        elif isinstance(block, Thinking):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": f} for f in block.fragments]
            deltas.append({"type": "signature_delta", "signature": block.signature})
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": f} for f in block.fragments]
        events.append(
            _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        events += [
            _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
        ]
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = script.stop or ("tool_use" if any(isinstance(b, Call) for b in script.blocks) else "end_turn")
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": out},
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def openai_events(script: Reply, model: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse(
            None,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": [choice],
            },
        )

    events = [chunk({"role": "assistant", "content": ""})]
    call_index = 0
    for block in script.blocks:
        if isinstance(block, Text):
            events += [chunk({"content": f}) for f in block.fragments]
        elif isinstance(block, Thinking):
            events += [chunk({"reasoning_content": f}) for f in block.fragments]
        else:
            first = {
                "index": call_index,
                "id": block.id,
                "type": "function",
                "function": {"name": block.name, "arguments": ""},
            }
            events.append(chunk({"tool_calls": [first]}))
            events += [
                chunk({"tool_calls": [{"index": call_index, "function": {"arguments": f}}]}) for f in block.fragments
            ]
            call_index += 1
    stop = script.stop or ("tool_calls" if call_index else "stop")
    events.append(chunk({}, stop))
    inp, out, cache_read, _ = script.usage
    usage = {
        "prompt_tokens": inp + cache_read,
        "completion_tokens": out,
        "total_tokens": inp + cache_read + out,
        "prompt_tokens_details": {"cached_tokens": cache_read},
    }
    events.append(
        _sse(
            None,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": [],
                "usage": usage,
            },
        )
    )
    events.append(_sse(None, "[DONE]"))
    return events


def _error_body(kind: str, status: int, error_type: str) -> dict[str, Any]:
    names = {
        429: "rate_limit_error",
        529: "overloaded_error",
        500: "api_error",
        401: "authentication_error",
        400: "invalid_request_error",
    }
    etype = error_type or names.get(status, "api_error")
    message = f"scripted {status} {etype}"
    if kind == "anthropic":
        return {"type": "error", "error": {"type": etype, "message": message}}
    return {"error": {"message": message, "type": etype, "code": None}}


# ------------------------------------------------------------------------------------------ server


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


class FakeLLM:
    """The server and its script; ``anthropic_url`` / ``openai_url`` are the SDKs' base URLs."""

    def __init__(
        self, cycle: list[Reply] | None = None, responder: Callable[[dict[str, Any]], Reply] | None = None
    ) -> None:
        self._script: deque[Reply] = deque()
        self._cycle = cycle or []  # replies served in turn once the script is empty (benchmarks)
        # Answers from the request itself once script and cycle are empty: concurrent runs (durable workers)
        # cannot share one ordered script.
        self.responder = responder
        self._served = 0
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self.disconnects = 0
        # Bound and listening before the server thread starts: a client can connect at once (the kernel
        # queues it), so nobody has to wait for the server to come up.
        self._socket = socket.socket()
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port = int(self._socket.getsockname()[1])
        self.anthropic_url = f"http://127.0.0.1:{self.port}"
        self.openai_url = f"http://127.0.0.1:{self.port}/v1"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # -- script

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> list[Reply]:
        with self._lock:
            left = list(self._script)
            self._script.clear()
            self.requests = []
            self.disconnects = 0
        return left

    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    # -- serving

    async def _handle(self, request: Request) -> Response:
        body = await request.json()
        path = request.url.path
        kind = "anthropic" if path.endswith("/messages") else "openai"
        with self._lock:
            self.requests.append(Received(path, body, dict(request.headers)))
            script = self._script.popleft() if self._script else None
            if script is None and self._cycle:
                script = self._cycle[self._served % len(self._cycle)]
                self._served += 1
        if script is None and self.responder is not None:
            script = self.responder(body)
        if script is None:
            return JSONResponse(_error_body(kind, 500, "no_script"), status_code=500)
        if script.status != 200:
            return JSONResponse(
                _error_body(kind, script.status, script.error_type), script.status, headers=script.headers
            )
        model = str(body.get("model", "fake"))
        if script.raw is not None:
            events = [_sse(None, item) for item in script.raw]
        else:
            events = anthropic_events(script, model) if kind == "anthropic" else openai_events(script, model)

        async def stream() -> Any:
            try:
                for index, event in enumerate(events):
                    if script.hang_after is not None and index == script.hang_after:
                        await asyncio.sleep(30)  # bounded: the client gives up long before
                        return
                    if script.error_after is not None and index == script.error_after:
                        yield _sse("error", _error_body(kind, 529, "overloaded_error"))
                        return
                    yield event
            except asyncio.CancelledError:
                self.disconnects += 1
                raise

        return StreamingResponse(stream(), media_type="text/event-stream", headers=script.headers)

    def start(self) -> FakeLLM:
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._socket.close()


SCENARIOS: dict[str, list[Reply]] = {
    # One answer of 50 streamed fragments.
    "text": [reply(Text(*[f"word{i} " for i in range(50)]))],
    # Three turns that each call a tool, then the answer: four model turns per run.
    "tools": [
        reply(Text("Adding."), Call("c1", "add", '{"a": 1,', ' "b": 2}')),
        reply(Call("c2", "add", '{"a": 3, "b": 4}')),
        reply(Call("c3", "add", '{"a": 5, "b": 6}')),
        reply(Text(*[f"word{i} " for i in range(50)])),
    ],
}


def main() -> None:
    """``python -m tests.support.fake_llm SCENARIO``: serve until stdin closes; prints the port first."""
    import sys

    server = FakeLLM(cycle=SCENARIOS[sys.argv[1]]).start()
    print(server.port, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
