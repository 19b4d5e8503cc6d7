from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from toolrig.approvals.allowlist import add_patterns
from toolrig.errors import ConfigError


def test_patterns_are_added_keeping_comments_order_and_quoting(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "# mine\ntools:\n  deny: ['run_command']  # never\napprovals:\n  mode: smart\n  allow:\n    - \"calculate\"\n"
    )
    assert add_patterns(path, ("approvals", "allow"), ["read_output", "calculate"]) == ["read_output"]
    text = path.read_text()
    assert text.startswith("# mine\ntools:\n  deny: ['run_command']  # never\n")
    assert '    - "calculate"\n    - read_output\n' in text


def test_missing_sections_are_created(tmp_path: Path) -> None:
    path = tmp_path / "new" / "config.yaml"
    add_patterns(path, ("agents", "builder", "approvals", "allow"), ["run_command:make *"])
    assert yaml.safe_load(path.read_text()) == {"agents": {"builder": {"approvals": {"allow": ["run_command:make *"]}}}}
    path.write_text("output: {max_chars: 5000}\n")
    add_patterns(path, ("approvals", "allow"), ["x"])
    assert yaml.safe_load(path.read_text()) == {"output": {"max_chars": 5000}, "approvals": {"allow": ["x"]}}


def test_a_file_of_the_wrong_shape_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    for text in ("approvals: [1, 2]\n", "approvals:\n  allow: everything\n", "- a\n"):
        path.write_text(text)
        with pytest.raises(ConfigError):
            add_patterns(path, ("approvals", "allow"), ["x"])
        assert path.read_text() == text


def test_an_edit_that_would_break_the_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("approvals:\n  mode: sometimes\n")
    with pytest.raises(ConfigError, match="would break the file"):
        add_patterns(path, ("approvals", "allow"), ["x"])
    assert path.read_text() == "approvals:\n  mode: sometimes\n"


def test_concurrent_savers_lose_no_pattern(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("approvals:\n  allow: []\n")
    threads = [
        threading.Thread(target=add_patterns, args=(path, ("approvals", "allow"), [f"tool_{i}"])) for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(yaml.safe_load(path.read_text())["approvals"]["allow"]) == sorted(f"tool_{i}" for i in range(8))
