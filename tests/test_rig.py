from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.conftest import Call
from toolrig.errors import ConfigError
from toolrig.registry import Registry
from toolrig.result import ToolResult
from toolrig.rig import Rig

SETTINGS = """\
tool_config:
  greet: {greeting: Hello, allowed_names: ["*"]}
agents:
  formal:
    tool_config:
      greet: {greeting: Good evening}
  narrow:
    tool_config:
      greet: {allowed_names: ["team-*"]}
"""


@pytest.mark.parametrize(
    ("agent", "name", "expected"),
    [
        (None, "ana", "Hello, ana"),
        ("formal", "ana", "Good evening, ana"),  # the agent's value over the global one
        ("narrow", "team-x", "Hello, team-x"),  # the global greeting kept, the agent's list applies
        ("narrow", "ana", "denied"),
    ],
)
def test_an_agent_gets_its_own_tool_settings_over_the_global_ones(
    consumer: Call, user_config: Callable[[str], Path], agent: str | None, name: str, expected: str
) -> None:
    user_config(SETTINGS)
    result = consumer("greet", {"name": name}, agent)
    assert (result["output"]["text"] if not result["is_error"] else result["error_type"]) == expected


def test_a_typo_in_an_agents_tool_settings_names_that_file_key_and_line(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    path = user_config(SETTINGS + "  sloppy:\n    tool_config:\n      greet:\n        greting: hi\n")
    with pytest.raises(ConfigError) as caught:
        Rig(workspace)
    assert caught.value.file == path and caught.value.line == 13
    assert caught.value.key == "agents.sloppy.tool_config.greet.greting"


def test_a_bad_global_value_is_reported_at_the_global_key(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    user_config(
        "tool_config:\n  greet: {allowed_names: 5}\nagents:\n  formal:\n    tool_config:\n      greet: {greeting: x}\n"
    )
    with pytest.raises(ConfigError) as caught:
        Rig(workspace)
    assert caught.value.key == "tool_config.greet.allowed_names" and caught.value.line == 2


def test_agent_settings_for_unknown_or_settingless_tools_are_startup_errors(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    user_config("agents:\n  a:\n    tool_config:\n      gret: {}\n")
    with pytest.raises(ConfigError, match=r"config\.yaml:4: agents\.a\.tool_config\.gret: no tool has this name"):
        Rig(workspace)
    user_config("agents:\n  a:\n    tool_config:\n      calculate: {precision: 2}\n")
    with pytest.raises(ConfigError, match=r"config\.yaml:4: agents\.a\.tool_config\.calculate: this tool takes no"):
        Rig(workspace)


def test_an_agent_without_a_profile_gets_the_global_settings(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    user_config(SETTINGS)
    rig = Rig(workspace)
    result = rig.call_sync("greet", {"name": "sub"}, agent_id="subagent-7", parent_agent_id="formal")
    assert result.output == {"text": "Hello, sub"}


def test_call_sync_never_builds_the_repr_of_its_result(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python 3.11's asyncio.Runner formats the main task (result included) when it restores SIGINT handling;
    # for a large output that repr cost more than the call itself.
    built: list[str] = []

    def record(self: ToolResult) -> str:
        built.append("repr")  # reprlib swallows exceptions, so record rather than raise
        return "ToolResult(...)"

    monkeypatch.setattr(ToolResult, "__repr__", record)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a plain script
    try:
        result = Rig(workspace, config={}).call_sync("calculate", {"expression": "1 + 1"})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.output == {"result": 2}
    assert built == []


@pytest.mark.anyio
async def test_a_rig_without_mcp_servers_opens_and_closes_as_a_no_op(workspace: Path) -> None:
    rig = Rig(workspace)
    assert rig.mcp_servers is None
    async with rig as opened:
        assert opened is rig
        assert (await rig.call("calculate", {"expression": "1 + 1"})).output == {"result": 2}
    await rig.aclose()  # closing twice is harmless


def test_configured_mcp_servers_are_registered_but_not_started_by_construction(workspace: Path) -> None:
    # A command that cannot run would fail the moment anything started it.
    rig = Rig(workspace, config={"mcp_servers": {"later": {"command": "/nonexistent/server"}}})
    assert rig.mcp_servers is not None
    assert list(rig.mcp_servers.servers) == ["later"]


def test_rig_call_is_a_coroutine_function_where_python_lets_it_say_so(workspace: Path) -> None:
    """Frameworks choose how to run a handler by this check; ``call`` returns the executor's coroutine itself."""
    import inspect

    rig = Rig(workspace, config={}, registry=Registry([]))
    assert inspect.iscoroutinefunction(rig.call) is (sys.version_info >= (3, 12))
    pending = rig.call("nothing_here")
    assert inspect.iscoroutine(pending)
    result = anyio.run(lambda: pending)
    assert result.is_error and result.error_type == "unknown_tool"
