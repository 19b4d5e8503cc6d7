from __future__ import annotations

import os
from pathlib import Path

from tests.file_helpers import Caller, git_init, write
from toolrig.sandbox.text import sha256


def test_read_files_numbers_lines_and_returns_hashes(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.py": "one\ntwo\n"})
    out = call.ok("read_files", paths=["a.py"])
    assert out["files"]["a.py"] == "     1\tone\n     2\ttwo"
    assert out["hashes"]["a.py"] == sha256(b"one\ntwo\n")


def test_read_files_pages_with_offset_and_limit_and_says_how_to_go_on(call: Caller, workspace: Path) -> None:
    write(workspace, {"long.txt": "".join(f"line {n}\n" for n in range(1, 101))})
    view = call.ok("read_files", paths=["long.txt"], offset=10, limit=5)["files"]["long.txt"]
    assert view.split("\n")[0] == "    10\tline 10"
    assert view.endswith("[86 more lines; read on with offset=15.]")


def test_each_bad_path_gets_its_own_marker_and_never_fails_the_others(call: Caller, workspace: Path) -> None:
    git_init(workspace)
    write(
        workspace,
        {
            ".gitignore": "*.log\n",
            "good.txt": "fine\n",
            "debug.log": "x",
            "big.txt": "x" * 2_000,
            "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
            ".env.example": "API_KEY=changeme\n",
            "dir/inner.txt": "x",
        },
    )
    caller = Caller(workspace, {"tool_config": {"read_files": {"max_file_bytes": 1_000}}})
    paths = ["good.txt", "gone.txt", "debug.log", "big.txt", "../outside.txt", "image.png", ".env.example", "dir"]
    files = caller.ok("read_files", paths=paths)["files"]
    assert files["good.txt"] == "     1\tfine"
    markers = {path: files[path].split("]")[0] + "]" for path in paths[1:]}
    assert markers == {
        "gone.txt": "[FILE DOES NOT EXIST]",
        "debug.log": "[FILE IGNORED]",
        "big.txt": "[FILE TOO LARGE]",
        "../outside.txt": "[OUTSIDE PROJECT]",
        "image.png": "[BINARY FILE]",
        ".env.example": "[TEMPLATE FILE]",
        "dir": "[NOT A FILE]",
    }
    assert "     1\tAPI_KEY=changeme" in files[".env.example"]


def test_a_missing_file_suggests_similar_names(call: Caller, workspace: Path) -> None:
    write(workspace, {"config.yaml": ""})
    assert "config.yaml" in call.ok("read_files", paths=["config.yml"])["files"]["config.yml"]


def test_read_files_with_only_refused_paths_is_denied(call: Caller) -> None:
    assert "outside the workspace" in call.error("read_files", "denied", paths=["/etc/passwd"])


def test_read_files_keeps_crlf_out_of_the_view_and_reads_other_encodings(call: Caller, workspace: Path) -> None:
    write(workspace, {"w.txt": "a\r\nb\r\n".encode("utf-16"), "l.txt": "café\n".encode("latin-1")})
    files = call.ok("read_files", paths=["w.txt", "l.txt"])["files"]
    assert files == {"w.txt": "     1\ta\n     2\tb", "l.txt": "     1\tcafé"}


def test_read_subtree_shows_a_tree_and_contents_within_the_budget(call: Caller, workspace: Path) -> None:
    git_init(workspace)
    write(
        workspace,
        {
            ".gitignore": "dist/\n",
            "pkg/__init__.py": "",
            "pkg/core.py": "x = 1\n",
            "pkg/deep/a/b/c/far.py": "far\n",
            "pkg/huge.txt": "y" * 5_000,
            "dist/bundle.js": "ignored",
        },
    )
    out = call.ok("read_subtree", paths=["."], max_depth=3, max_bytes=1_000)
    assert "pkg/" in out["tree"] and "    core.py" in out["tree"] and "dist" not in out["tree"]
    assert out["files"]["pkg/core.py"] == "     1\tx = 1"
    assert "pkg/huge.txt" not in out["files"] and "pkg/huge.txt" in out["message"]
    assert "far.py" not in out["tree"] and "below max_depth" in out["message"]
    assert "gitignored" in out["message"]


def test_list_directory_gives_types_sizes_and_times(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "abc", "sub/b.py": "x"})
    os.symlink("a.txt", workspace / "link")
    out = call.ok("list_directory", directories=[{"path": "."}])
    entries = {e["name"]: e for e in out["listings"]["."]}
    assert entries["a.txt"]["type"] == "file" and entries["a.txt"]["size"] == 3
    assert entries["sub/"]["type"] == "dir" and entries["link"]["type"] == "symlink"
    assert entries["a.txt"]["modified"].endswith("Z")
    assert "sub/b.py" not in entries


def test_list_directory_recursive_with_a_pattern(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "", "sub/b.py": "", "sub/c.ts": "", "sub/deep/d.py": ""})
    out = call.ok("list_directory", directories=[{"path": ".", "recursive": True}], pattern="*.{py,ts}")
    assert sorted(e["name"] for e in out["listings"]["."]) == ["sub/b.py", "sub/c.ts", "sub/deep/d.py"]


def test_list_directory_of_a_file_is_not_found(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": ""})
    assert "is not a directory" in call.error("list_directory", "not_found", directories=[{"path": "a.txt"}])


def test_list_directory_stops_at_its_budget_and_says_so(call: Caller, workspace: Path) -> None:
    write(workspace, {f"d{n // 100}/f{n}.txt": "" for n in range(1_100)})
    out = call.ok("list_directory", directories=[{"path": ".", "recursive": True}])
    assert len(out["listings"]["."]) == 1_000 and "More entries were not shown" in out["message"]
