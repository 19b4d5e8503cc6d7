from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from tests.support.file_helpers import Caller, git_init, write
from tests.support.media_tools import make_notebook, make_pdf, tiny_png
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
            "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00",  # a PNG signature and a damaged header
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


# Issue 18 item 5: reads beyond text.


def test_an_image_comes_back_as_image_content_with_a_line_saying_so(call: Caller, workspace: Path) -> None:
    write(workspace, {"shot.png": tiny_png(4, 3), "notes.txt": "hi\n"})
    result = call("read_files", paths=["shot.png", "notes.txt"])
    assert not result.is_error and result.output is not None
    assert result.output["files"]["shot.png"].startswith("[IMAGE] 'shot.png' (image/png, 4x3, ")
    assert result.output["files"]["notes.txt"] == "     1\thi"
    [image] = result.content
    assert image.type == "image" and base64.b64decode(image.data) == tiny_png(4, 3)  # type: ignore[union-attr]
    assert result.output["hashes"]["shot.png"] == sha256(tiny_png(4, 3))


def test_an_image_over_the_configured_limit_is_refused_with_the_setting_named(workspace: Path) -> None:
    write(workspace, {"big.png": tiny_png(50, 50)})
    call = Caller(workspace, {"tool_config": {"read_files": {"max_image_bytes": 20}}})
    result = call("read_files", paths=["big.png"])
    assert not result.content and result.output is not None
    text = result.output["files"]["big.png"]
    assert text.startswith("[FILE TOO LARGE]") and "max_image_bytes" in text


def test_images_beyond_the_per_call_limit_are_named_not_attached(workspace: Path) -> None:
    write(workspace, {f"{n}.png": tiny_png() for n in range(3)})
    call = Caller(workspace, {"tool_config": {"read_files": {"max_images": 2}}})
    result = call("read_files", paths=["0.png", "1.png", "2.png"])
    assert len(result.content) == 2 and "was not attached" in (result.output or {})["files"]["2.png"]


def test_a_pdf_reads_as_text_per_page_and_pages_choose_which(call: Caller, workspace: Path) -> None:
    write(workspace, {"report.pdf": make_pdf(["Intro", "Findings", "Appendix"])})
    first = call.ok("read_files", paths=["report.pdf"], pages="2")["files"]["report.pdf"]
    assert first.startswith("[PDF] 'report.pdf': pages 2 of 3.") and "Findings" in first and "Intro" not in first
    whole = call.ok("read_files", paths=["report.pdf"])["files"]["report.pdf"]
    assert all(word in whole for word in ("Intro", "Findings", "Appendix"))
    wrong = call.ok("read_files", paths=["report.pdf"], pages="9")["files"]["report.pdf"]
    assert wrong.startswith("[CANNOT READ]") and "3 pages" in wrong


def test_a_pdf_bigger_than_the_text_limit_is_read_up_to_the_document_limit(workspace: Path) -> None:
    write(workspace, {"report.pdf": make_pdf(["Intro"])})
    small = Caller(workspace, {"tool_config": {"read_files": {"max_file_bytes": 100}}})
    assert "Intro" in small.ok("read_files", paths=["report.pdf"])["files"]["report.pdf"]
    tiny = Caller(workspace, {"tool_config": {"read_files": {"max_file_bytes": 100, "max_document_bytes": 100}}})
    assert tiny.ok("read_files", paths=["report.pdf"])["files"]["report.pdf"].startswith("[FILE TOO LARGE]")


def test_a_notebook_reads_as_cells_with_outputs_and_its_images_attached(call: Caller, workspace: Path) -> None:
    write(workspace, {"analysis.ipynb": make_notebook(image=tiny_png())})
    result = call("read_files", paths=["analysis.ipynb"])
    text = (result.output or {})["files"]["analysis.ipynb"]
    assert text.startswith("[NOTEBOOK] 'analysis.ipynb': cells with their outputs; 1 images attached.")
    assert "print('hello')" in text and "[output: stdout]" in text and "ZeroDivisionError" in text
    assert [part.type for part in result.content] == ["image"]
    paged = call.ok("read_files", paths=["analysis.ipynb"], offset=2, limit=2)["files"]["analysis.ipynb"]
    assert paged.split("\n")[1].startswith("     2\t")


def test_binary_true_returns_the_raw_bytes_as_base64(call: Caller, workspace: Path) -> None:
    data = bytes(range(256))
    write(workspace, {"blob.bin": data, "shot.png": tiny_png()})
    result = call("read_files", paths=["blob.bin", "shot.png"], binary=True)
    files = (result.output or {})["files"]
    assert base64.b64decode(files["blob.bin"]) == data and base64.b64decode(files["shot.png"]) == tiny_png()
    assert not result.content


def test_encoding_decodes_text_the_detector_would_get_wrong(call: Caller, workspace: Path) -> None:
    write(workspace, {"utf16.txt": "héllo\n".encode("utf-16-le"), "cp.txt": "\u20ac5\n".encode("cp1252")})
    assert call.ok("read_files", paths=["utf16.txt"], encoding="utf-16-le")["files"]["utf16.txt"] == "     1\théllo"
    assert call.ok("read_files", paths=["cp.txt"], encoding="cp1252")["files"]["cp.txt"] == "     1\t\u20ac5"
    bad = call.ok("read_files", paths=["cp.txt"], encoding="utf-8")["files"]["cp.txt"]
    assert bad.startswith("[CANNOT READ] 'cp.txt' is not valid utf-8")


@pytest.mark.parametrize("encoding", ["rot13", "zlib", "no-such-codec", "idna", "\x00"])
def test_an_encoding_that_is_not_a_text_encoding_is_invalid_input(call: Caller, workspace: Path, encoding: str) -> None:
    write(workspace, {"a.txt": "a\n"})
    call.error("read_files", "invalid_input", paths=["a.txt"], encoding=encoding)
