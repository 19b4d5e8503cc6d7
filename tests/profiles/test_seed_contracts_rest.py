"""Issue 38's last rows, each from the seed's own call or config: codebuff's timeout, and more below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolrig.result import ToolResult
from toolrig.rig import Rig


def _value(result: ToolResult) -> Any:
    assert not result.is_error, result
    assert result.output is not None and result.output["type"] == "json"
    return result.output["value"]


# --------------------------------------------------------------- codebuff run_terminal_command timeout_seconds: -1

SEED_003_NO_TIMEOUT = {"command": "echo done", "timeout_seconds": -1}  # its description: "-1 for no timeout"


@pytest.mark.parametrize(
    ("tool_config", "limit"),
    [({}, 600.0), ({"max_timeout_seconds": 45}, 45.0), ({"allow_no_timeout": True}, None)],
)
def test_codebuffs_no_timeout_call_runs_bounded_by_what_config_allows(
    workspace: Path, tool_config: dict[str, Any], limit: float | None
) -> None:
    config = {"approvals": {"mode": "off"}, "tool_config": {"run_command": tool_config}}
    with Rig(workspace, config=config, profile="codebuff") as rig:
        result = rig.call_sync("run_terminal_command", SEED_003_NO_TIMEOUT)
    assert _value(result)["stdout"] == "done\n"
    said = [n for n in result.notes if "timeout_seconds -1" in n]
    if limit is None:
        assert said == []
    else:
        assert len(said) == 1 and f"{limit:g} seconds" in said[0]


def test_toolrigs_own_no_timeout_stays_the_configs_choice(workspace: Path) -> None:
    with Rig(workspace, config={"approvals": {"mode": "off"}}) as rig:
        result = rig.call_sync("run_command", {"command": "echo done", "timeout_seconds": -1})
    assert result.is_error and result.error_type == "denied"
