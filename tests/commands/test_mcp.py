"""``toolrig mcp``: its commands, their errors, and that the CLI stays light until one of them runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.adapters.mcp_peers import ROOT
from toolrig.cli import app
from toolrig.config import McpServerConfig
from toolrig.sources.mcp_trust import TrustStore


def configure(home: Path, servers: dict[str, object]) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}), encoding="utf-8")


@pytest.fixture
def peer(tmp_path: Path) -> dict[str, object]:
    state = tmp_path / "peer"
    state.mkdir()
    (state / "description.txt").write_text("Describe.", encoding="utf-8")
    return {"command": sys.executable, "args": [str(ROOT / "tests/adapters/mcp_peer_server.py"), str(state)]}


@pytest.mark.parametrize("args", [["mcp", "--help"], ["mcp", "serve", "--help"], ["mcp", "trust", "--help"]])
def test_mcp_help_imports_no_mcp_sdk(args: list[str]) -> None:
    code = (
        "import sys\nfrom toolrig.cli import main\n"
        f"sys.argv = ['toolrig', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = {m.split('.')[0] for m in sys.modules} & {'mcp', 'anthropic', 'openai'}\n"
        "print('LOADED', sorted(loaded), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "LOADED []" in out.stderr, out.stderr
    assert "Usage: toolrig mcp" in out.stdout


def test_trust_lists_first_use_then_reports_nothing_changed(
    workspace: Path, toolrig_home: Path, peer: dict[str, object]
) -> None:
    configure(toolrig_home, {"peer": peer})
    first = CliRunner().invoke(app, ["mcp", "trust", "peer", "--root", str(workspace)])
    assert first.exit_code == 0, first.output
    assert "  + echo" in first.output and "Trusted the 5 tools of the MCP server 'peer'." in first.output
    again = CliRunner().invoke(app, ["mcp", "trust", "peer", "--root", str(workspace)])
    assert "Nothing changed" in again.output
    listed = CliRunner().invoke(app, ["mcp", "list", "--root", str(workspace)])
    assert "peer" in listed.output and "5 tools trusted" in listed.output


def test_trust_names_the_configured_servers_when_asked_for_another(workspace: Path, toolrig_home: Path) -> None:
    configure(toolrig_home, {"one": {"command": "a"}, "two": {"url": "http://127.0.0.1:9/mcp"}})
    out = CliRunner().invoke(app, ["mcp", "trust", "three", "--root", str(workspace)])
    assert out.exit_code == 2
    assert "no MCP server named 'three' is configured (configured: one, two)" in out.output


def test_trust_reports_a_server_that_cannot_start_and_trusts_nothing(workspace: Path, toolrig_home: Path) -> None:
    configure(toolrig_home, {"ghost": {"command": "/nonexistent/mcp-server"}})
    out = CliRunner().invoke(app, ["mcp", "trust", "ghost", "--root", str(workspace)])
    assert out.exit_code == 2
    assert "the MCP server 'ghost' could not be started" in out.output
    assert TrustStore().trusted("ghost", McpServerConfig(command="/nonexistent/mcp-server")) is None


def test_list_starts_nothing_and_says_when_nothing_is_configured(workspace: Path, toolrig_home: Path) -> None:
    out = CliRunner().invoke(app, ["mcp", "list", "--root", str(workspace)])
    assert out.exit_code == 0 and "No MCP servers are configured" in out.output
    configure(toolrig_home, {"later": {"command": "/nonexistent/mcp-server"}})
    out = CliRunner().invoke(app, ["mcp", "list", "--root", str(workspace)])
    assert "later" in out.output and "never listed" in out.output


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("", "toolrig: approvals: off: every tool runs without asking, writes and commands included"),
        ("approvals: {mode: smart}\n", "toolrig: approvals: smart: read-only tools run; every write and command asks"),
    ],
)
def test_serve_names_the_approval_mode_in_force_when_it_starts(
    workspace: Path, toolrig_home: Path, config: str, expected: str
) -> None:
    (toolrig_home / "config.yaml").write_text(config, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "toolrig", "mcp", "serve", "--root", str(workspace)],
        stdin=subprocess.DEVNULL,  # a client that hangs up at once: the server starts, says its line, and ends
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stderr.splitlines()[0].startswith(expected), done.stderr
    assert done.stdout == ""  # stdout is the protocol's: the line never goes there
