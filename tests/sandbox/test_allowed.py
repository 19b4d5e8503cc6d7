"""allowed_paths: per-tool settings that narrow the workspace, never widen it (issue 18 item 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolrig.errors import ToolError
from toolrig.sandbox.allowed import AllowedPaths, AllowedPathsSettings
from toolrig.sandbox.paths import Workspace


@pytest.fixture
def tree(tmp_path: Path) -> Workspace:
    for name in ("data/research/a.txt", "data/other/b.txt", "output/c.txt", "secret/key.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    os.symlink(tmp_path / "secret", tmp_path / "data/research/leak")
    return Workspace(tmp_path)


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("data/research/a.txt", True),
        ("./data/research/a.txt", True),
        ("data/other/b.txt", False),
        ("data/research/../other/b.txt", False),
        ("data/research/leak/key.txt", False),  # a symlink inside the allowed directory leads out of it
        ("secret/key.txt", False),
        ("output/c.txt", True),
        (".", False),
    ],
)
def test_a_path_must_lie_under_an_allowed_glob_as_spelled_and_as_resolved(tree: Workspace, path: str, ok: bool) -> None:
    allowed = AllowedPaths(["data/research/**", "output/"])
    resolved = tree.resolve(path)
    assert allowed.permits(tree, path, resolved) is ok
    if not ok:
        with pytest.raises(ToolError) as caught:
            allowed.check(tree, path, resolved, "read_files")
        assert caught.value.error_type.value == "denied" and "allowed_paths" in (caught.value.next_action_hint or "")


@pytest.mark.parametrize("pattern", ["../outside/**", "/abs/../x", "~/notes", "", "a/\x00"])
def test_a_glob_that_could_reach_outside_the_workspace_is_a_config_error(pattern: str) -> None:
    with pytest.raises(ValidationError):
        AllowedPathsSettings(allowed_paths=[pattern])


@settings(max_examples=60)
@given(st.text(alphabet=st.sampled_from(list("ab./*!~\\ ")), min_size=1, max_size=12))
def test_no_allowed_glob_lets_a_path_outside_the_root_through(pattern: str) -> None:
    try:
        config = AllowedPathsSettings(allowed_paths=[pattern])
    except ValidationError:
        return
    workspace = Workspace("/tmp")
    allowed = config.allowed()
    assert allowed is not None
    for outside in (Path("/etc/passwd"), Path("/")):
        assert not allowed.permits(workspace, str(outside), outside)
