"""Memory tools against hostile paths: only memory files under the agent's own root are reachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrig.rig import Rig


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "memory/../../outside.md",
        "memory/../src/app.py",
        "/etc/passwd",
        "~/.bashrc",
        "C:\\Windows\\x.md",
        "src/app.py",
        "README.md",
        ".toolrig/config.yaml",
        "memory",
        "agents/beta/MEMORY.md",
        "memory\\..\\..\\outside.md",
    ],
)
@pytest.mark.parametrize("tool", ["memory_get", "memory_write"])
def test_memory_tools_refuse_paths_that_are_not_the_agents_memory(
    rig: Rig, workspace: Path, tool: str, path: str
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    args: dict[str, object] = {"file_path": path}
    if tool == "memory_write":
        args["content"] = "pwned"
    result = rig.call_sync(tool, args, agent_id="alpha")
    assert result.is_error and result.error_type in ("denied", "invalid_input"), result
    if result.error_type == "denied":
        assert "read_files" in (result.next_action_hint or "")
    assert (workspace / "src" / "app.py").read_text() == "print('hi')\n"
    assert not (workspace.parent / "outside.md").exists()


def test_memory_tools_refuse_a_symlink_inside_memory_that_leads_to_another_file(rig: Rig, workspace: Path) -> None:
    (workspace / "memory").mkdir()
    (workspace / "notes.txt").write_text("private\n")
    (workspace / "memory" / "link.md").symlink_to(workspace / "notes.txt")
    outside = workspace.parent / "outside.md"
    outside.write_text("outside\n")
    (workspace / "memory" / "out.md").symlink_to(outside)
    for name in ("memory/link.md", "memory/out.md"):
        read = rig.call_sync("memory_get", {"file_path": name})
        assert read.error_type == "denied"
        write = rig.call_sync("memory_write", {"file_path": name, "content": "x", "mode": "overwrite"})
        assert write.error_type == "denied"
    assert (workspace / "notes.txt").read_text() == "private\n"
    assert outside.read_text() == "outside\n"


def test_memory_tools_refuse_an_agent_id_that_would_climb_out_of_agents(rig: Rig) -> None:
    result = rig.call_sync("memory_write", {"file_path": "MEMORY.md", "content": "x"}, agent_id="../evil")
    assert result.error_type == "invalid_input"
