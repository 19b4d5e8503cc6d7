"""Our stdio transport: the protocol owns the pipes, big messages cross intact, and files fall back."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.mcp_peers import fixture_params, serve_params, stdio_session, toolrig_command

pytestmark = pytest.mark.anyio


async def test_stray_output_and_stdin_readers_never_touch_the_protocol(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    async with stdio_session(fixture_params(workspace, toolrig_home), log) as client:
        result = await client.call_tool("noisy", {"tag": "intact"})
        # `cat` read the null device (EOF at once), not our protocol pipe.
        assert result.structured_content == {"text": "intact", "child_read": 0}
        after = await client.call_tool("count_up", {"steps": 1})
        assert after.structured_content == {"counted": 1}
    assert "junk from print()" in log.read_text() and "junk written to fd 1" in log.read_text()


async def test_messages_larger_than_a_pipe_buffer_cross_both_ways(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    text = "é" * 45_000 + "end"  # 90 kB of UTF-8 each way, under the 100,000-character output cap
    async with stdio_session(fixture_params(workspace, toolrig_home), tmp_path / "server.log") as client:
        result = await client.call_tool("noisy", {"tag": text})
    assert result.structured_content is not None and result.structured_content["text"] == text


def test_a_regular_file_on_stdin_is_served_by_the_sdk_transport(workspace: Path, toolrig_home: Path) -> None:
    requests = workspace.parent / "requests.jsonl"
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n")
    params = serve_params(workspace, toolrig_home)
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [toolrig_command(), *params.args],
            stdin=stdin,
            capture_output=True,
            timeout=60,
            env={**os.environ, **(params.env or {})},
            check=False,
        )
    [answer] = map(json.loads, done.stdout.decode().splitlines())
    assert answer["result"]["serverInfo"]["name"] == "toolrig"


async def test_a_fast_path_call_cancelled_in_the_same_read_as_its_request_is_cancelled_and_not_answered() -> None:
    from toolrig.adapters.mcp_stdio import _read_lines, _Wire

    cancelled = anyio.Event()

    async def answer() -> bytes:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return b"never\n"

    class Fast:
        decided = True

        def opening(self, message: dict[str, object]) -> None:
            raise AssertionError("the era is decided")

        def accept(self, message: dict[str, object]) -> object:
            return answer if message.get("method") == "tools/call" else None

    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    os.set_blocking(read_in, False)
    os.write(write_in, (json.dumps(call) + "\n" + json.dumps(cancel) + "\n").encode())
    os.close(write_in)
    send, receive = anyio.create_memory_object_stream[object](10)
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(_read_lines, read_in, send, _Wire(write_out), Fast(), group)
                await cancelled.wait()
        forwarded = [message async for message in receive]  # the reader closed it at end of input
        assert len(forwarded) == 1  # the cancellation still reaches the SDK; the call did not
        os.close(write_out)
        write_out = -1
        assert os.read(read_out, 100) == b""  # nothing was answered
    finally:
        for fd in (read_in, read_out, write_out):
            if fd >= 0:
                os.close(fd)
        receive.close()


class _Pipes:
    """``_read_lines`` over real pipes with a stub fast path: the test writes requests and reads the answers."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers  # tool name -> async function making the answer's bytes
        self.read_in, self.write_in = os.pipe()
        self.read_out, self.write_out = os.pipe()
        os.set_blocking(self.read_in, False)
        self.send, self.receive = anyio.create_memory_object_stream[object](10)
        self.buffer = b""

    def accept(self, message: dict[str, object]) -> object:
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if message.get("method") != "tools/call" or name not in self.answers:
            return None
        answer = self.answers[name]
        request_id = message["id"]

        async def make() -> bytes:
            return json.dumps({"id": request_id, "result": await answer()}).encode() + b"\n"  # type: ignore[operator]

        return make

    def request(self, request_id: int, name: str) -> None:
        call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name}}
        os.write(self.write_in, (json.dumps(call) + "\n").encode())

    async def answer(self) -> dict[str, object]:
        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.read_out)
            self.buffer += os.read(self.read_out, 65536)
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)  # type: ignore[no-any-return]

    async def serve(self, group: object) -> None:
        from toolrig.adapters.mcp_stdio import _read_lines, _Wire

        pipes = self

        class Fast:
            decided = True

            def opening(self, message: dict[str, object]) -> None:
                raise AssertionError("the era is decided")

            def accept(self, message: dict[str, object]) -> object:
                return pipes.accept(message)

        await _read_lines(self.read_in, self.send, _Wire(self.write_out), Fast(), group)  # type: ignore[arg-type]

    def close(self) -> None:
        for fd in (self.read_in, self.write_in, self.read_out, self.write_out):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.receive.close()


async def _served(pipes: _Pipes, body: object) -> None:
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(pipes.serve, group)
                await body()  # type: ignore[operator]
                os.close(pipes.write_in)  # end of input: the reader and the idle workers end
    finally:
        pipes.close()


async def test_sequential_fast_path_calls_are_run_by_one_reused_worker_task() -> None:
    tasks: list[int] = []

    async def whoami() -> int:
        tasks.append(anyio.get_current_task().id)
        return len(tasks)

    pipes = _Pipes({"whoami": whoami})

    async def body() -> None:
        for request_id in range(1, 6):
            pipes.request(request_id, "whoami")
            assert await pipes.answer() == {"id": request_id, "result": request_id}

    await _served(pipes, body)
    assert len(tasks) == 5 and len(set(tasks)) == 1  # no task spawned per call


async def test_concurrent_fast_path_calls_run_concurrently_each_on_its_own_worker() -> None:
    started: list[int] = []
    all_started = anyio.Event()

    async def wait_for_the_others() -> int:
        started.append(anyio.get_current_task().id)
        if len(started) == 3:
            all_started.set()
        await all_started.wait()  # a transport that ran calls one at a time would never get here
        return len(started)

    pipes = _Pipes({"wait": wait_for_the_others})

    async def body() -> None:
        for request_id in (1, 2, 3):
            pipes.request(request_id, "wait")
        answers = [await pipes.answer() for _ in range(3)]
        assert sorted(a["id"] for a in answers) == [1, 2, 3]  # type: ignore[type-var]

    await _served(pipes, body)
    assert len(set(started)) == 3


async def test_a_context_variable_a_call_leaves_set_is_never_seen_by_a_later_call() -> None:
    import contextvars

    leaked: contextvars.ContextVar[str] = contextvars.ContextVar("leaked", default="clean")
    seen: list[str] = []

    async def dirty() -> str:
        seen.append(leaked.get())
        leaked.set("left behind by an earlier call")  # set and never reset
        return "dirty"

    pipes = _Pipes({"dirty": dirty})

    async def body() -> None:
        for request_id in range(1, 4):
            pipes.request(request_id, "dirty")
            await pipes.answer()

    await _served(pipes, body)
    assert seen == ["clean", "clean", "clean"]


@given(
    request_id=st.one_of(st.integers(), st.text(max_size=30)),
    pad=st.integers(min_value=0, max_value=200),
)
def test_the_refusal_answers_the_request_whose_id_comes_before_the_cut(request_id: int | str, pad: int) -> None:
    from toolrig.adapters.mcp_stdio import _refusal
    from toolrig.sources import mcp_lines
    from toolrig.sources.mcp_lines import Oversized

    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "x", "params": {"p": "y" * (30_000 + pad)}})
    answer = json.loads(_refusal(Oversized(line.encode()[: mcp_lines._HEAD], len(line)), 20_000))
    assert answer["jsonrpc"] == "2.0" and answer["id"] == request_id
    assert answer["error"]["code"] == -32600 and "over the 20,000" in answer["error"]["message"]


@pytest.mark.parametrize(
    "head",
    [
        b'{"jsonrpc": "2.0", "method": "x", "params": {"id": 5, "text": "aaaa',  # an id inside params is not its id
        b'{"jsonrpc": "2.0", "id": "unfinished str',  # an id cut in half is not guessed
        b'{"jsonrpc": "2.0", "id": true, "method": "x", "params": "',  # not a JSON-RPC id
        b'[{"jsonrpc": "2.0", "id": 1, "method": "x", "params": "',  # a batch
        b"\xff\xfe not json at all",
        b"[" * 16_000,  # nesting past the parser's depth
    ],
)
def test_a_refusal_whose_request_id_cannot_be_read_is_addressed_to_null(head: bytes) -> None:
    from toolrig.adapters.mcp_stdio import _refusal
    from toolrig.sources.mcp_lines import Oversized

    answer = json.loads(_refusal(Oversized(head, 10_000_000), 4_194_304))
    assert answer["id"] is None and answer["error"]["code"] == -32600


async def test_a_message_over_the_limit_is_refused_at_once_and_the_server_goes_on(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    from mcp.shared.exceptions import MCPError

    params = serve_params(workspace, toolrig_home, "--max-message-bytes", "100000")
    async with stdio_session(params, tmp_path / "server.log") as client:
        with anyio.fail_after(60):  # a refusal the client cannot match to its request would leave it waiting
            with pytest.raises(MCPError, match="over the 100,000 this server reads"):
                await client.call_tool("calculate", {"expression": "1+" * 60_000 + "1"})
            assert (await client.call_tool("calculate", {"expression": "6 * 7"})).structured_content == {"result": 42}
            within = await client.call_tool("calculate", {"expression": "1+" * 40_000 + "1"})
            assert "over the" not in str(within.content)  # read and answered by the tool, whatever it made of it
    assert re.search(r"refused a 120\d{3}-byte message", (tmp_path / "server.log").read_text())


def test_an_answer_of_the_client_over_the_limit_is_dropped_not_answered_under_the_clients_own_numbering(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    """Client and server number their requests apart: an error for the oversized answer's id (the server's own
    request's) would reach the client as the answer to *its* request of that number."""
    args = [toolrig_command(), "mcp", "serve", "--root", str(workspace), "--max-message-bytes", "100000"]
    with (tmp_path / "server.log").open("w") as log:
        server = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "TOOLRIG_HOME": str(toolrig_home)},
        )
    assert server.stdin is not None and server.stdout is not None
    try:
        opening = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": opening},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "result": {"pad": "x" * 200_000}},  # an answer, to nothing of the server's
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        ]
        server.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        server.stdin.flush()
        answers = [json.loads(server.stdout.readline()) for _ in range(2)]
    finally:
        server.stdin.close()
        server.wait(30)
        server.stdout.close()
    assert [answer["id"] for answer in answers] == [1, 3]  # nothing for 2
    assert "tools" in answers[1]["result"]
    assert re.search(r"refused a 2000\d\d-byte message", (tmp_path / "server.log").read_text())
