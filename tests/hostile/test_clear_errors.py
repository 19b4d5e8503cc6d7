"""The review's hostile inputs that ended as ``internal`` (D15), and hints that named denied files (D18a)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.file_helpers import Caller, write
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.ripgrep import confine_to

REVIEW_R15: list[tuple[str, dict[str, Any]]] = [
    ("write_file", {"path": "a.txt", "content": "\ud800"}),
    ("key_value_set", {"key": "k", "value": "\ud800"}),
    ("key_value_set", {"key": "\ud800", "value": 1}),
    ("librarian_store", {"collection": "c", "document_name": "d.xml", "content": "<a>\ud800</a>"}),
    ("code_search", {"pattern": "\x00"}),
    ("code_search", {"pattern": "x", "glob": ["*\x00.py"]}),
    ("code_search", {"pattern": "x", "glob": ["*\ud800.py"]}),
    ("glob", {"pattern": "\x00"}),
    ("glob", {"pattern": "**/*\ud800"}),
    ("glob", {"pattern": "src/" + "{a,b}" * 9 + "/*.py"}),
    ("list_directory", {"directories": [{"path": "."}], "pattern": "{a,b}" * 9}),
]


@pytest.mark.parametrize(("name", "args"), REVIEW_R15, ids=[f"{n}-{i}" for i, (n, _) in enumerate(REVIEW_R15)])
def test_review_r15_hostile_inputs_are_invalid_input_not_internal(
    workspace: Path, name: str, args: dict[str, Any]
) -> None:
    call = Caller(workspace)
    result = call(name, **args)
    assert result.is_error
    assert result.error_type == "invalid_input", result.message
    call.rig.close()


def test_write_file_refuses_text_the_files_encoding_cannot_hold(workspace: Path) -> None:
    (workspace / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    call = Caller(workspace)
    message = call.error(
        "str_replace", "invalid_input", path="latin.txt", replacements=[{"old": "caf", "new": "\u4e2d"}]
    )
    assert "latin" in message.lower() or "encode" in message.lower()


def test_a_search_root_that_vanished_is_not_found(workspace: Path) -> None:
    (workspace / "gone").mkdir()
    shutil.rmtree(workspace / "gone")
    with pytest.raises(ToolError) as caught:
        confine_to(workspace, workspace / "gone")
    assert caught.value.error_type is ErrorType.NOT_FOUND


def test_review_r18a_similar_name_hints_never_name_a_denied_file(workspace: Path) -> None:
    write(workspace, {"secret_plans_q3.txt": "x\n", "secrets/plans.txt": "y\n", "public_plans.txt": "z\n"})
    call = Caller(workspace, {"workspace": {"deny_globs": ["secret_plans_q3.txt", "secrets/"]}})
    result = call("read_files", paths=["secret_plans.txt", "secretz/plans.txt"]).model_dump(mode="json")
    text = str(result)
    assert "secret_plans_q3" not in text
    assert "secrets" not in text.replace("secretz", "")
    message = str(call("read_files", paths=["public_plan.txt"]).model_dump(mode="json"))
    assert "public_plans.txt" in message  # hints still work for what may be seen
