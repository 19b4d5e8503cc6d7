"""The opening answered before the SDK loads: the SDK's very bytes, and nothing it would not have said."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.adapters.mcp_opening import (
    HANDSHAKE_VERSIONS,
    MODERN_VERSIONS,
    OpeningAnswers,
    schema_surface,
    vouched_initialize,
)
from toolrig.adapters.mcp_server import McpToolServer
from toolrig.cli import make_rig

PROFILES = ["toolrig", "claude", "codebuff", "native", "camelagi"]
HELLO = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def initialize(version: str, request_id: int | str = 1, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": version, **HELLO, **params},
    }


async def sdk_answers(server: McpToolServer, messages: list[dict[str, Any]]) -> list[bytes]:
    """The SDK's own answers to these messages, as our transport writes them: the reference."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    send, read = anyio.create_memory_object_stream[Any](10)
    write, receive = anyio.create_memory_object_stream[Any](10)
    out: list[bytes] = []
    with anyio.fail_after(60), send, read, write, receive:
        async with anyio.create_task_group() as group:
            group.start_soon(server.server.run, read, write, server.server.create_initialization_options())
            for message in messages:
                parsed = jsonrpc_message_adapter.validate_json(json.dumps(message), by_name=False)
                await send.send(SessionMessage(parsed))
                if "id" in message:
                    answer = await receive.receive()
                    out.append((answer.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())
            group.cancel_scope.cancel()
    return out


@pytest.mark.anyio
@pytest.mark.parametrize("profile", PROFILES)
async def test_initialize_and_tools_list_are_the_sdks_bytes_for_every_version_under_every_profile(
    workspace: Path, toolrig_home: Path, profile: str
) -> None:
    server = McpToolServer(make_rig(workspace, profile=profile))
    asked = [*HANDSHAKE_VERSIONS, *MODERN_VERSIONS, "1999-01-01"]  # the last two negotiate down
    for version, request_id in zip(asked, [1, "one", 2**40, -3, 0, "é"], strict=True):
        messages = [
            initialize(version, request_id),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
        ]
        opening = server.opening()
        ours = [opening.answer(message) for message in (messages[0], messages[2])]
        assert ours == await sdk_answers(server, messages), (profile, version)
        assert json.loads(ours[1] or b"")["result"]["tools"], "a listing with tools"


@pytest.mark.anyio
async def test_an_agents_tool_list_is_the_sdks_bytes(workspace: Path, toolrig_home: Path) -> None:
    (toolrig_home / "config.yaml").write_text("agents:\n  math:\n    tools: [calculate, read_files]\n")
    server = McpToolServer(make_rig(workspace, agent="math"))
    messages = [initialize("2025-06-18"), {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}]
    opening = server.opening()
    ours = [opening.answer(message) for message in messages]
    assert ours == await sdk_answers(server, messages)
    assert [tool["name"] for tool in json.loads(ours[1] or b"")["result"]["tools"]] == ["calculate", "read_files"]


def test_the_version_lists_are_the_sdks() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    assert (HANDSHAKE_VERSIONS, MODERN_VERSIONS) == (HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS)


@pytest.mark.parametrize(
    "message",
    [
        initialize("2025-06-18", True),  # a boolean id
        initialize("2025-06-18", 1.0),
        initialize("2025-06-18", None),
        initialize("2025-06-18", 2**60),  # beyond what every peer reads alike
        {**initialize("2025-06-18"), "extra": 1},
        {**initialize("2025-06-18"), "jsonrpc": "1.0"},
        initialize("2025-06-18", _meta={"progressToken": 1}),
        initialize("2025-06-18", clientInfo={"name": "t"}),  # no version
        initialize("2025-06-18", clientInfo={"name": "t", "version": 1}),
        initialize("2025-06-18", capabilities={"roots": {"listChanged": "yes"}}),
        initialize("2025-06-18", capabilities={"sampling": True}),
        {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},  # before initialize: the SDK refuses it
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    ],
)
def test_what_the_opening_cannot_vouch_for_it_leaves_to_the_sdk(
    workspace: Path, toolrig_home: Path, message: dict[str, Any]
) -> None:
    assert McpToolServer(make_rig(workspace)).opening().answer(message) is None


def test_after_the_opening_initialize_only_a_plain_tools_list_is_answered(workspace: Path, toolrig_home: Path) -> None:
    opening = McpToolServer(make_rig(workspace)).opening()
    assert opening.answer(initialize("2025-06-18")) is not None
    assert opening.answer(initialize("2025-06-18", 2)) is None  # a second initialize is the SDK's to answer
    for params in ({"cursor": "x"}, {"_meta": {"progressToken": 1}}, []):
        assert opening.answer({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}) is None
    assert opening.answer({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}) is None


def test_a_tool_whose_schema_the_sdk_would_refuse_hands_the_whole_listing_over(
    workspace: Path, toolrig_home: Path
) -> None:
    class Odd:
        name = "odd"
        description = "d"
        display_name = None

        def input_schema(self) -> dict[str, Any]:
            return {"type": "object", "properties": {"a": "not a schema"}}

        def output_schema(self) -> None:
            return None

    opening = OpeningAnswers(name="n", version="1", instructions=None, handlers=(), tools=lambda: [Odd()])  # type: ignore[list-item]
    assert opening.answer(initialize("2025-06-18")) is not None
    assert opening.answer({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) is None


json_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
schema_keys = st.sampled_from(["type", "properties", "required", "$schema", "$defs", "additionalProperties", "x"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        schema_keys,
        json_values | st.just("object") | st.dictionaries(st.text(max_size=3), st.booleans() | st.just({}), max_size=2),
        max_size=5,
    )
)
def test_a_schema_is_vouched_for_only_as_the_sdk_dumps_it(schema: dict[str, Any]) -> None:
    from mcp_types.methods import serialize_server_result
    from pydantic import ValidationError

    ours = schema_surface(schema)
    try:
        theirs = serialize_server_result("tools/list", "2025-06-18", {"tools": [{"name": "t", "inputSchema": schema}]})
    except ValidationError:
        assert ours is None
        return
    if ours is not None:
        assert json.dumps(ours) == json.dumps(theirs["tools"][0]["inputSchema"])


capability = st.recursive(
    st.booleans()
    | st.text(max_size=3)
    | st.integers(0, 2)
    | st.dictionaries(st.sampled_from(["listChanged"]), st.booleans()),
    lambda inner: st.dictionaries(st.sampled_from(["listChanged", "form", "url", "tools", "x"]), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "protocolVersion": st.sampled_from(["2025-06-18", "x"]) | json_scalars,
            "capabilities": st.dictionaries(
                st.sampled_from(["roots", "sampling", "elicitation", "experimental", "tasks", "extensions", "other"]),
                capability,
                max_size=3,
            )
            | json_scalars,
            "clientInfo": st.dictionaries(
                st.sampled_from(["name", "version", "title", "description", "websiteUrl", "icons"]),
                json_scalars,
                max_size=4,
            ),
            "_meta": st.dictionaries(st.text(max_size=3), json_scalars, max_size=2),
        },
    )
)
def test_initialize_params_are_vouched_for_only_when_the_sdk_takes_them(params: dict[str, Any]) -> None:
    from mcp.types import InitializeRequestParams
    from mcp_types.methods import validate_client_request

    if not vouched_initialize(params):
        return
    for version in HANDSHAKE_VERSIONS:
        validate_client_request("initialize", version, params)
    InitializeRequestParams.model_validate(params, by_name=False)


# ----------------------------------------------------------------------------------- over real pipes

SERVE = (
    "import anyio, sys\n"
    "from pathlib import Path\n"
    "from toolrig.adapters.mcp_server import McpToolServer\n"
    "from toolrig.cli import make_rig\n"
    "server = McpToolServer(make_rig(Path(sys.argv[1])))\n"
    "anyio.run(lambda: server.serve_stdio(opening=sys.argv[2] == 'opening'))\n"
)


def exchange(workspace: Path, home: Path, lines: list[bytes], answers: int, *, opening: bool) -> list[Any]:
    """A server's first ``answers`` answers to these lines, in the order written; then its input ends."""
    return talk([SERVE, str(workspace), "opening" if opening else "sdk"], home, lines, answers)[0]


def talk(args: list[str], home: Path, lines: list[bytes], answers: int) -> tuple[list[Any], str]:
    """``python -c *args`` fed these lines: its first ``answers`` answers, and its stderr once its input ended.

    The input stays open until they are in: at the end of its input a server may drop calls in flight.
    """
    with subprocess.Popen(
        [sys.executable, "-c", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TOOLRIG_HOME": str(home)},
    ) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        try:
            process.stdin.write(b"".join(line + b"\n" for line in lines))
            process.stdin.flush()
            reader = _Lines(process.stdout.fileno())
            got = [json.loads(reader.next() or b"null") for _ in range(answers)]
            process.stdin.close()
            rest = reader.buffer + process.stdout.read()
            errors = process.stderr.read()
            process.wait(timeout=120)
        finally:
            process.kill()
    assert process.returncode == 0 and b"Traceback" not in errors, errors.decode()[-3000:]
    assert None not in got and rest == b"", (got, rest, errors.decode()[-3000:])
    return got, errors.decode()


class _Lines:
    """Lines from a descriptor, each waited for at most two minutes: a hang guard (a missing answer), not a timing."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self) -> bytes:
        while b"\n" not in self.buffer:
            if not select.select([self.fd], [], [], 120)[0]:
                return b""
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return b""
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


def dumps(message: object) -> bytes:
    return json.dumps(message).encode()


TOOLS_LIST = dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
INITIALIZED = dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lines", "answers"),
    [
        ([b"{not json", dumps(initialize("2025-06-18")), TOOLS_LIST], 2),
        ([dumps([initialize("2025-06-18")]), TOOLS_LIST], 1),  # a batch
        ([dumps(initialize("2025-06-18", True)), TOOLS_LIST], 1),
        ([dumps(initialize("2025-06-18")), b"[1, 2]", INITIALIZED, TOOLS_LIST], 2),
        ([dumps(initialize("2025-06-18")), dumps(initialize("2024-11-05", 5)), TOOLS_LIST], 3),
        ([dumps(initialize("2025-06-18")), dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})], 2),
        ([TOOLS_LIST, dumps(initialize("2025-06-18"))], 2),
        ([dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})], 1),
        (
            [
                dumps(initialize("2025-06-18")),
                INITIALIZED,
                dumps({**json.loads(TOOLS_LIST), "params": {"cursor": "c"}}),
            ],
            2,
        ),
        ([dumps(initialize("2025-06-18")), *[INITIALIZED] * 20, TOOLS_LIST], 2),
    ],
    ids=[
        "malformed",
        "batch",
        "bool-id",
        "junk-between",
        "reinitialize",
        "id-reused",
        "list-first",
        "bad-params",
        "cursor",
        "initialized-flood",
    ],
)
def test_hostile_openings_get_what_the_sdk_alone_answers(
    workspace: Path, toolrig_home: Path, lines: list[bytes], answers: int
) -> None:
    ours = exchange(workspace, toolrig_home, lines, answers, opening=True)
    theirs = exchange(workspace, toolrig_home, lines, answers, opening=False)
    key = json.dumps
    assert sorted(map(key, ours)) == sorted(map(key, theirs))
    assert ours, "something was answered"


@pytest.mark.slow
def test_the_whole_session_goes_on_after_the_opening_through_the_sdk(workspace: Path, toolrig_home: Path) -> None:
    calls = [
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "calculate", "arguments": {"expression": "6*7"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 5, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel", "params": {"level": "info"}},
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
    ]
    lines = [dumps(initialize("2025-06-18")), INITIALIZED, TOOLS_LIST, *map(dumps, calls)]
    ours = sorted(exchange(workspace, toolrig_home, lines, 8, opening=True), key=lambda answer: answer["id"])
    assert [answer["id"] for answer in ours] == [1, 2, 3, 4, 5, 6, 7, 8]  # calls may finish out of order
    theirs = sorted(exchange(workspace, toolrig_home, lines, 8, opening=False), key=lambda answer: answer["id"])
    assert ours[:2] == theirs[:2]
    assert ours[2]["result"]["structuredContent"] == {"result": 42}
    assert all("result" in answer for answer in ours), ours
    assert ours[7] == ours[1] | {"id": 8}  # the SDK's own listing, later, is the opening's


OPENING_WATCH = (
    "import json, sys\n"
    "from toolrig.adapters import mcp_opening\n"
    "plain = mcp_opening.OpeningAnswers.answer\n"
    "def answer(self, message):\n"
    "    out = plain(self, message)\n"
    "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anthropic', 'openai'))\n"
    "    tools = sorted(m for m in sys.modules if m.startswith('toolrig.tools.') and m != 'toolrig.tools._index')\n"
    "    seen = [message.get('method'), out is not None, heavy, len(tools)]\n"
    "    print('OPENING', json.dumps(seen), file=sys.stderr, flush=True)\n"
    "    return out\n"
    "mcp_opening.OpeningAnswers.answer = answer\n"
    "from toolrig.cli import main\n"
    "sys.argv = ['toolrig', 'mcp', 'serve', '--root', sys.argv[1]]\n"
    "main()\n"
)


@pytest.mark.slow
def test_mcp_serve_answers_initialize_and_tools_list_before_importing_the_sdk(
    workspace: Path, toolrig_home: Path
) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "calculate", "arguments": {"expression": "6*7"}},
    }
    lines = [dumps(initialize("2025-06-18")), INITIALIZED, TOOLS_LIST, dumps(call)]
    answers, errors = talk([OPENING_WATCH, str(workspace)], toolrig_home, lines, 3)
    seen = [json.loads(line[8:]) for line in errors.splitlines() if line.startswith("OPENING ")]
    assert [entry[:2] for entry in seen[2:]] == [["tools/call", False]]  # the SDK's to answer
    # Nothing of the SDK (nor a provider's) before either answer; no tool module before the first.
    assert [entry[:3] for entry in seen[:2]] == [["initialize", True, []], ["tools/list", True, []]], errors
    assert seen[0][3] == 0 and seen[1][3] > 10
    assert [answer["id"] for answer in answers] == [1, 2, 3]  # the call went through the SDK, loaded by then
    assert answers[2]["result"]["structuredContent"] == {"result": 42}
