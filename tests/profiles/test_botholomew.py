"""Seed 001's Botholomew tools: its CLI examples and its tools' calls, verbatim ('toolrig' for 'botholomew').

botholomew context read /notes/meeting.md --offset 10 --limit 20
botholomew context tree / --max-depth 3
botholomew search semantic "quarterly revenue"
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.cli import app
from toolrig.profiles.botholomew import boxed
from toolrig.rig import Rig

MEETING = "".join(f"line {n}\n" for n in range(1, 41))


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "notes" / "archive" / "2023" / "deep").mkdir(parents=True)
    (workspace / "notes" / "meeting.md").write_text(MEETING, encoding="utf-8")
    (workspace / "notes" / "archive" / "old.md").write_text("old\n", encoding="utf-8")
    (workspace / "notes" / "archive" / "2023" / "deep" / "hidden.md").write_text("x\n", encoding="utf-8")
    (workspace / "memory").mkdir()
    (workspace / "memory" / "finance.md").write_text(
        "# Revenue\nQuarterly revenue grew 12 percent in Q3.\n\n# Hiring\nTwo engineers joined.\n", encoding="utf-8"
    )
    return workspace


def cli(root: Path, *words: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, [*words, "--root", str(root)])
    assert result.exit_code in (0, 1), result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_context_read_with_offset_and_limit(project: Path) -> None:
    out = cli(project, "context", "read", "/notes/meeting.md", "--offset", "10", "--limit", "20")
    assert out["output"] == {"content": "".join(f"line {n}\n" for n in range(10, 30)), "is_error": False}


def test_context_tree_of_the_root_to_a_depth(project: Path) -> None:
    out = cli(project, "context", "tree", "/", "--max-depth", "3")["output"]
    assert out["is_error"] is False
    assert out["tree"].split("\n") == [
        "./",
        "├── memory/",
        "│   └── finance.md",
        "└── notes/",
        "    ├── archive/",
        "    │   ├── 2023/",  # its deep/ is a level past 3
        "    │   └── old.md",
        "    └── meeting.md",
    ]
    assert out["total_items"] == 3
    assert cli(project, "context", "tree")["output"]["tree"].startswith("./\n├── memory/")  # the path is optional


def test_search_semantic_finds_the_passage(project: Path) -> None:
    out = cli(project, "search", "semantic", "quarterly revenue")["output"]
    assert out["is_error"] is False
    first = out["results"][0]
    assert (first["path"], first["title"]) == ("memory/finance.md", "Revenue")
    assert "Quarterly revenue grew" in first["snippet"] and isinstance(first["score"], float)


def test_the_models_calls_in_botholomews_shapes(project: Path) -> None:
    with Rig(project, config={"approvals": {"mode": "off"}}, profile="botholomew") as rig:
        missing = rig.call_sync("context_read", {"path": "notes/architecture.md"})
        assert missing.is_error and missing.error_type == "not_found"
        assert missing.message == "No file at notes/architecture.md"
        assert 'context_tree({"path": "notes"})' in (missing.next_action_hint or "")
        # '/' is the context root (the workspace), never the machine's: /etc/passwd is the workspace's etc/passwd.
        escaped = rig.call_sync("context_read", {"path": "/etc/passwd"})
        assert (
            escaped.is_error and escaped.error_type == "not_found" and "root:" not in json.dumps(escaped.model_dump())
        )
        none = rig.call_sync("search_semantic", {"query": "quarterly revenue", "top_k": 5, "threshold": 1e9})
        assert none.output == {"results": [], "is_error": False}
        tree = rig.call_sync("context_tree", {"path": "notes", "max_depth": 1})
        assert tree.output is not None and "old.md" not in tree.output["tree"]
        offered = {s["name"] for s in rig.schemas("json", profile=rig.profile)}
    assert {"context_read", "context_tree", "search_semantic"} <= offered
    assert not {"read_files", "read_subtree", "memory_search"} & offered  # each capability once


_NAMES = st.text(alphabet="abcdefgh", min_size=1, max_size=4)
_TREES = st.recursive(st.just(None), lambda kids: st.dictionaries(_NAMES, kids, max_size=4), max_leaves=20)


def _indented(tree: dict[str, Any], depth: int = 1) -> list[str]:
    lines = []
    for name, kids in tree.items():
        lines.append("  " * depth + (f"{name}/" if kids is not None else name))
        if kids:
            lines += _indented(kids, depth + 1)
    return lines


@given(st.dictionaries(_NAMES, _TREES, max_size=5))
def test_the_boxed_tree_keeps_every_entry_at_its_depth(tree: dict[str, Any]) -> None:
    indented = ["root/", *_indented(tree)]
    drawn, files = boxed("\n".join(indented))
    rows = drawn.split("\n")
    assert len(rows) == len(indented)
    for source, row in zip(indented[1:], rows[1:], strict=True):
        depth = (len(source) - len(source.lstrip())) // 2
        assert row[4 * depth :] == source.strip() and row[4 * (depth - 1) : 4 * depth] in ("├── ", "└── ")
    assert files == sum(1 for line in indented[1:] if not line.endswith("/"))


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**9), st.floats(allow_nan=True), st.text(max_size=12),
    st.sampled_from(["/", "//..//etc/passwd", "../..", "~/x", "notes", "\x00"]),
    st.lists(st.text(max_size=3), max_size=2),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    face=st.sampled_from(["context_read", "context_tree", "search_semantic"]),
    args=st.dictionaries(
        st.sampled_from(["path", "offset", "limit", "max_depth", "query", "top_k", "threshold"]), _VALUES, max_size=4
    ),
)
def test_no_hostile_call_of_a_botholomew_face_is_internal(
    tmp_path_factory: pytest.TempPathFactory, face: str, args: dict[str, Any]
) -> None:
    root = tmp_path_factory.getbasetemp() / "botholomew-fuzz"
    (root / "notes").mkdir(parents=True, exist_ok=True)
    (root / "notes" / "a.md").write_text("a\n", encoding="utf-8")
    with Rig(root, config={"approvals": {"mode": "off"}}, profile="botholomew") as rig:
        result = rig.call_sync(face, args)
    assert not result.is_error or result.error_type != "internal", (face, args, result.message)
    assert "root:x:" not in json.dumps(result.model_dump(), default=str)
