from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from toolrig.rig import Rig


def call(rig: Rig, name: str, args: dict[str, object], agent: str | None = None) -> dict[str, object]:
    result = rig.call_sync(name, args, agent_id=agent) if agent else rig.call_sync(name, args)
    return result.model_dump(mode="json")


def test_memory_search_renders_numbered_hits_separated_by_rules(rig: Rig, workspace: Path) -> None:
    (workspace / "memory").mkdir()
    (workspace / "memory" / "plan.md").write_text("# Plan\nShip the release on Friday.\n\nOther notes.\n")
    (workspace / "MEMORY.md").write_text("The release checklist lives in memory/plan.md.\n")
    output = call(rig, "memory_search", {"query": "release Friday"})["output"]
    assert isinstance(output, dict) and output["count"] == 2
    first, second = str(output["results"]).split("\n---\n")
    assert first.startswith("1. memory/plan.md lines 1-2 (score ")
    assert "Ship the release on Friday." in first
    assert second.startswith("2. MEMORY.md line 1 (score ")


def test_memory_search_sees_a_file_written_after_the_previous_search(rig: Rig) -> None:
    assert call(rig, "memory_search", {"query": "quokka"})["output"] == {
        "results": "No memory matches the query.",
        "count": 0,
    }
    call(rig, "memory_write", {"file_path": "memory/animals.md", "content": "A quokka smiles."})
    assert "quokka smiles" in str(call(rig, "memory_search", {"query": "quokka"})["output"])


def test_memory_search_with_only_punctuation_is_invalid_input_not_an_fts_error(rig: Rig) -> None:
    result = call(rig, "memory_search", {"query": '"()" * -'})
    assert result["error_type"] == "invalid_input"


def test_memory_get_numbers_lines_and_pages_with_from_and_lines(rig: Rig, workspace: Path) -> None:
    (workspace / "MEMORY.md").write_text("one\ntwo\nthree\nfour\n")
    output = call(rig, "memory_get", {"file_path": "MEMORY.md", "from": 2, "lines": 2})["output"]
    assert output == {"file": "MEMORY.md", "content": "2: two\n3: three", "total_lines": 4, "next_from": 4}
    tail = call(rig, "memory_get", {"file_path": "MEMORY.md", "from": 4})["output"]
    assert tail == {"file": "MEMORY.md", "content": "4: four", "total_lines": 4, "next_from": None}


def test_memory_get_of_a_missing_memory_file_is_not_found(rig: Rig) -> None:
    assert call(rig, "memory_get", {"file_path": "memory/none.md"})["error_type"] == "not_found"


def test_memory_write_appends_on_a_new_line_and_overwrites_on_request(rig: Rig, workspace: Path) -> None:
    call(rig, "memory_write", {"file_path": "memory/log.md", "content": "first"})
    call(rig, "memory_write", {"file_path": "memory/log.md", "content": "second\n"})
    assert (workspace / "memory" / "log.md").read_text() == "first\nsecond\n"
    output = call(rig, "memory_write", {"file_path": "memory/log.md", "content": "fresh", "mode": "overwrite"})
    assert output["output"] == {"file": "memory/log.md", "mode": "overwrite", "bytes": 5}
    assert (workspace / "memory" / "log.md").read_text() == "fresh"


def test_memory_write_leaves_no_temporary_files_behind(rig: Rig, workspace: Path) -> None:
    for n in range(3):
        call(rig, "memory_write", {"file_path": "memory/x.md", "content": f"line {n}"})
    assert sorted(os.listdir(workspace / "memory")) == ["x.md"]


def test_each_agent_has_its_own_memory_root_and_sees_only_it(rig: Rig, workspace: Path) -> None:
    call(rig, "memory_write", {"file_path": "MEMORY.md", "content": "alpha secret: walrus"}, agent="alpha")
    call(rig, "memory_write", {"file_path": "MEMORY.md", "content": "beta note: walrus"}, agent="beta")
    assert (workspace / "agents" / "alpha" / "MEMORY.md").read_text() == "alpha secret: walrus"
    alpha = str(call(rig, "memory_search", {"query": "walrus"}, agent="alpha")["output"])
    beta = str(call(rig, "memory_search", {"query": "walrus"}, agent="beta")["output"])
    shared = call(rig, "memory_search", {"query": "walrus"})["output"]
    assert "alpha secret" in alpha and "beta note" not in alpha
    assert "beta note" in beta and "alpha secret" not in beta
    assert shared == {"results": "No memory matches the query.", "count": 0}
    got = call(rig, "memory_get", {"file_path": "MEMORY.md"}, agent="beta")["output"]
    assert isinstance(got, dict) and got["content"] == "1: beta note: walrus"


def test_memory_search_draws_a_progress_bar_for_a_large_first_build_only_on_a_terminal(
    rig: Rig, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolrig.tools.memory as memory_tools

    monkeypatch.setattr(memory_tools, "LARGE_BUILD_FILES", 3)
    (workspace / "memory").mkdir()
    for n in range(4):
        (workspace / "memory" / f"f{n}.md").write_text(f"file {n}\n")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    call(rig, "memory_search", {"query": "file"})
    assert "4/4 files" in screen.getvalue()
    (workspace / "memory" / "f5.md").write_text("file 5\n")
    call(rig, "memory_search", {"query": "file"})
    assert screen.getvalue().count("files") == 1  # the warm refresh of one file draws nothing
