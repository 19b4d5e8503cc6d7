"""MCP over this process's stdin and stdout without a worker thread per line, and without waiting for the SDK.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``: every line read and every message
written (write, then flush) is a hop to a worker thread, three or more per call. When stdin and stdout are
pipes or sockets (as an MCP client starts us) this transport waits on the descriptors in the event loop
instead; for anything else (a regular file, say) ``serve`` falls back to the SDK's transport.

The opening: given an ``OpeningPath`` (``mcp_opening.OpeningAnswers``), the ``initialize`` and ``tools/list``
it can answer are answered before the SDK is even imported (importing it is most of a server's start-up).
The SDK loads in a worker thread after the tool list is written, or at once when a message needs it; then it is
handed the connection as if it had served it from the start: the ``initialize`` answered here (its own
answer to it is dropped, and compared) and the ``notifications/initialized`` held meanwhile, in order,
then everything else. A message the opening does not answer goes to the SDK, never around it.

Given a fast path (``mcp_fast.FastToolCalls``), the plain ``tools/call`` requests it accepts are answered
here without the SDK's request pipeline; every other message goes to the SDK as before.

Trust model: the protocol owns the real stdin and stdout. While serving, descriptor 0 reads the null
device and descriptor 1 writes to stderr, so a tool or child process that reads stdin or prints cannot
swallow or corrupt protocol messages; both are restored afterwards.
"""

from __future__ import annotations

import contextvars
import fcntl
import logging
import os
import stat
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic_core import from_json, to_json  # already loaded by toolrig's core; the SDK is what start-up avoids

from toolrig.sources import MAX_MESSAGE_BYTES  # `mcp serve --max-message-bytes` moves it
from toolrig.sources.mcp_lines import Lines, Oversized

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream


class FastPath(Protocol):
    @property
    def decided(self) -> bool: ...

    def opening(self, message: dict[str, Any]) -> None: ...

    def accept(self, message: dict[str, Any]) -> Callable[[], Awaitable[bytes]] | None: ...


class OpeningPath(Protocol):
    def answer(self, message: dict[str, Any]) -> bytes | None: ...


RunSdk = Callable[[Any, Any], Awaitable[None]]

log = logging.getLogger("toolrig.mcp")

_CHUNK = 1 << 16
_HELD = 8  # the read stream's buffer: room for every line held for the SDK (two at most) and then some


def _pollable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _Wire:
    """Our stdout: whole messages, one writer at a time (the SDK's messages and the fast path's answers)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        # fast_acquire: a free lock is taken without a turn of the event loop (one per answer otherwise); a
        # writer that has to wait for the pipe still holds it, so messages never interleave.
        self._lock = anyio.Lock(fast_acquire=True)
        self.closed = False

    async def write(self, data: bytes) -> None:
        async with self._lock:
            view = memoryview(data)
            while view and not self.closed:
                try:
                    written = os.write(self.fd, view)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    log.debug("the MCP client closed our stdout")
                    self.closed = True
                    return
                view = view[written:]


class _Handover:
    """The SDK's side of the connection: loaded in a worker thread, then given what the opening held back for it.

    Until ``needed`` the opening answers alone. The load runs in a thread (imports hold the GIL in bursts,
    the event loop stays free to answer); the main task waits for ``decided`` (loaded, or the input ended
    first) and ``flush``es the held lines before the SDK reads anything else, so it sees them first. A load
    is never abandoned: leaving waits for it, so the interpreter never shuts down under an import.
    """

    def __init__(self, answers: OpeningPath, load: Callable[[], None], group: TaskGroup) -> None:
        self.answers = answers
        self.active = True  # the opening still answers; False once anything went to the SDK
        self.held: list[bytes] = []
        self.shadow: tuple[int | str, bytes] | None = None  # the initialize we answered, the SDK will too
        self.decided = anyio.Event()
        self.flushed = anyio.Event()
        self.loaded = False
        self._load = load
        self._group = group
        self._error: BaseException | None = None
        self._started = False

    def preload(self) -> None:
        """Start loading the SDK (once): after the opening's answers are out, or when a message needs it."""
        if not self._started:
            self._started = True
            self._group.start_soon(self._run_load)

    async def _run_load(self) -> None:
        from anyio import to_thread

        try:
            await to_thread.run_sync(self._load)
            self.loaded = True
        except Exception as exc:  # re-raised in the serving task, which owns the failure
            self._error = exc
        self.decided.set()

    async def needed(self) -> None:
        """Hand the rest of the connection to the SDK; return once it has the held lines."""
        self.active = False
        self.preload()
        await self.flushed.wait()

    def ended(self) -> None:
        self.decided.set()

    def raise_failure(self) -> None:
        if self._error is not None:
            raise self._error


async def serve(
    run: RunSdk,
    load: Callable[[], None],
    fast: FastPath | None = None,
    opening: OpeningPath | None = None,
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> None:
    """Serve one client over fds 0 and 1: ``load`` imports the SDK and builds its server, ``run`` serves.

    A message longer than ``max_message_bytes`` is answered with an error and never held whole.
    """
    if not (_pollable(0) and _pollable(1)):
        load()
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await run(read, write)
        return
    if opening is None:
        load()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    os.set_blocking(wire_in, False)
    os.set_blocking(wire_out, False)
    read_send, read_receive = anyio.create_memory_object_stream[Any](_HELD)
    write_send, write_receive = anyio.create_memory_object_stream[Any](0)
    try:
        out = _Wire(wire_out)
        async with anyio.create_task_group() as group:
            handover = _Handover(opening, load, group) if opening is not None else None
            group.start_soon(_read_lines, wire_in, read_send, out, fast, group, handover, max_message_bytes)
            group.start_soon(_write_messages, out, write_receive, handover)
            if handover is not None:
                await handover.decided.wait()
                handover.raise_failure()
            if handover is None or handover.loaded:
                if handover is not None:
                    _flush(handover, read_send)
                await run(read_receive, write_send)
            group.cancel_scope.cancel()
    finally:
        for fd, wire in ((0, wire_in), (1, wire_out)):
            os.set_blocking(wire, True)
            os.dup2(wire, fd)
            os.close(wire)


def _flush(handover: _Handover, send: MemoryObjectSendStream[Any]) -> None:
    """The held lines, first into the SDK's read stream, in order; then the reader may go on.

    From here on every line goes to the SDK (or the fast path): nothing may be held after the flush.
    """
    handover.active = False
    for line in handover.held:
        with suppress(anyio.ClosedResourceError):  # the input ended meanwhile: nobody reads them
            send.send_nowait(_sdk_message(line))
    handover.held.clear()
    handover.flushed.set()


def _sdk_message(line: bytes) -> Any:
    """A line as the SDK's read stream carries it: a message, or the validation error it answers."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # pydantic's ValidationError: the runner answers with an error
        return exc


async def _read_lines(
    fd: int,
    send: MemoryObjectSendStream[Any],
    wire: _Wire,
    fast: FastPath | None,
    group: TaskGroup,
    handover: _Handover | None = None,
    limit: int = MAX_MESSAGE_BYTES,
) -> None:
    calls = _FastCalls(group, wire) if fast is not None else None
    split = Lines(limit)
    try:
        async with send:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                for line in split.feed(chunk):
                    if isinstance(line, Oversized):
                        log.warning("refused a %d-byte message (over --max-message-bytes %d)", line.size, split.limit)
                        if line.kind() != "answer":  # the client's answer to our request: its id is ours, not its
                            await wire.write(_refusal(line, split.limit))
                        continue
                    if not line.strip():
                        continue
                    if handover is not None and handover.active:
                        if await _opened(line, handover, wire, fast):
                            continue
                        await handover.needed()
                    if fast is not None and calls is not None and _took_fast(line, fast, calls):
                        continue
                    await send.send(_sdk_message(line))
    finally:
        if calls is not None:
            calls.close()
        if handover is not None:
            handover.ended()


def _refusal(line: Oversized, limit: int) -> bytes:
    """The JSON-RPC error that answers an oversized line, addressed to its request when its id could be read."""
    message = (
        f"The message was {line.size:,} bytes, over the {limit:,} this server reads "
        "(`toolrig mcp serve --max-message-bytes`); it was not read."
    )
    return to_json({"jsonrpc": "2.0", "id": line.request_id(), "error": {"code": -32600, "message": message}}) + b"\n"


async def _opened(line: bytes, handover: _Handover, wire: _Wire, fast: FastPath | None) -> bool:
    """Answer or hold a line of the opening; False when it needs the SDK (then so does everything after it)."""
    try:
        message = from_json(line)  # the SDK's parser: what it refuses (lone surrogates...) goes its way
    except ValueError:
        return False
    if not isinstance(message, dict):
        return False
    if handover.shadow is not None and message.keys() <= {"jsonrpc", "method", "params"}:
        initialized = message.get("jsonrpc") == "2.0" and message.get("method") == "notifications/initialized"
        if initialized and len(handover.held) < _HELD:  # a flood of them is the SDK's to take, at its pace
            handover.held.append(line)  # the SDK's session must see it; nothing answers a notification
            return True
        return False
    try:
        answer = handover.answers.answer(message)
    except Exception:  # a tool that cannot describe itself, say: the SDK's path answers as it always did
        log.exception("the opening could not answer %r; the SDK will", message.get("method"))
        return False
    if answer is None:
        return False
    if message["method"] == "initialize":
        handover.shadow = (message["id"], answer)
        handover.held.append(line)  # the SDK answers it too, later: that answer is dropped
        if fast is not None and not fast.decided:
            fast.opening(message)
    await wire.write(answer)
    if message["method"] != "initialize":
        handover.preload()  # the client has what it waited for: load the SDK for what comes next
    return True


def _took_fast(line: bytes, fast: FastPath, calls: _FastCalls) -> bool:
    """Start a fast-path call for this line and say so; otherwise it goes to the SDK (cancellations too)."""
    if fast.decided and b'"tools/call"' not in line and b"notifications/cancelled" not in line:
        return False
    try:
        message = from_json(line)  # the SDK's parser: what it refuses (lone surrogates...) goes its way
    except ValueError:
        return False
    if not isinstance(message, dict):
        return False
    if not fast.decided:
        fast.opening(message)
    if message.get("method") == "notifications/cancelled":
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, int | str) and type(request_id) is not bool:
            calls.cancel(request_id)
        return False
    answer = fast.accept(message)
    if answer is None:
        return False
    calls.start(answer, message["id"])
    return True


class _FastCalls:
    """Fast-path calls in flight, each run by a worker task this connection keeps for the next one.

    Spawning a task per call cost ~30 µs of CPU here (anyio's task-group bookkeeping and an asyncio task),
    waking a waiting worker a few. A worker runs one call at a time, so concurrent calls still run
    concurrently (a call that finds no idle worker starts a new one). Calls do not share state through
    context variables: a worker whose context a call changed (a variable set and not reset) ends after that
    call instead of taking the next, so each call starts from the context the connection's tasks start with.
    """

    def __init__(self, group: TaskGroup, wire: _Wire) -> None:
        self._group = group
        self._wire = wire
        self._idle: list[_Slot] = []  # workers waiting for a call, each on its own slot
        self._closed = False
        self.scopes: dict[int | str, anyio.CancelScope] = {}  # for notifications/cancelled

    def start(self, answer: Callable[[], Awaitable[bytes]], request_id: int | str) -> None:
        # Registered before any worker runs: a cancellation read in the same chunk must find it.
        scope = self.scopes[request_id] = anyio.CancelScope()
        job = (answer, request_id, scope)
        if self._idle:
            slot = self._idle.pop()
            slot.job = job
            slot.ready.set()
        else:
            self._group.start_soon(self._work, job)

    def close(self) -> None:
        """No more calls: idle workers end; calls in flight finish."""
        self._closed = True
        while self._idle:
            self._idle.pop().ready.set()

    def cancel(self, request_id: int | str) -> None:
        scope = self.scopes.get(request_id)
        if scope is not None:
            scope.cancel()

    async def _work(self, job: _Job | None) -> None:
        context = contextvars.copy_context()
        while job is not None:
            answer, request_id, scope = job
            with scope:
                try:
                    data = await answer()
                finally:
                    if self.scopes.get(request_id) is scope:
                        del self.scopes[request_id]
                await self._wire.write(data)
            if self._closed or len(self._idle) >= _SPARE_WORKERS or not _same_context(context):
                return
            slot = _Slot()
            self._idle.append(slot)
            await slot.ready.wait()
            job = slot.job


class _Slot:
    __slots__ = ("job", "ready")

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.job: _Job | None = None  # None when woken to end


_Job = tuple[Callable[[], Awaitable[bytes]], int | str, anyio.CancelScope]
_SPARE_WORKERS = 4  # idle workers kept for the next calls; a burst beyond them starts more, which then end


def _same_context(before: contextvars.Context) -> bool:
    """Whether this task's context variables hold exactly what they held in ``before`` (none added)."""
    now = contextvars.copy_context()
    return len(now) == len(before) and all(var in now and now[var] is value for var, value in before.items())


async def _write_messages(
    wire: _Wire, receive: MemoryObjectReceiveStream[Any], handover: _Handover | None = None
) -> None:
    async with receive:
        async for message in receive:
            data = (message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
            if handover is not None and handover.shadow is not None and _answers(message, handover.shadow[0]):
                sent = handover.shadow[1]
                handover.shadow = None
                if data != sent:  # a defect of ours, never the client's: say so, the client has its answer
                    log.warning("the opening's initialize answer differs from the SDK's: %r, then %r", sent, data)
                continue
            await wire.write(data)
            if wire.closed:
                return


def _answers(message: Any, request_id: int | str) -> bool:
    """Whether an outgoing message is the response (or error) to this request id."""
    sent = message.message
    return not hasattr(sent, "method") and type(getattr(sent, "id", None)) is type(request_id) and sent.id == request_id
