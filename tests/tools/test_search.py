from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.sandbox.test_mtimes import CHANGES, make_tree, stamp_at
from tests.support.file_helpers import Caller, git_init, write
from tests.support.inotify import instances_held, no_instance_left
from toolrig.sandbox import mtimes
from toolrig.sandbox.ripgrep import HIDDEN_DIRS_SEARCHED
from toolrig.tools.search import Newest, _newest


@pytest.fixture
def project(workspace: Path) -> Path:
    git_init(workspace)
    write(
        workspace,
        {
            ".gitignore": "node_modules/\n*.min.js\n",
            "src/app.py": "import os\n\ndef main():\n    print('hello world')\n",
            "src/util.py": "def helper():\n    return 'hello'\n",
            "src/deep/x.ts": "const hello = 1;\n",
            "node_modules/dep/index.js": "hello from a dependency\n",
            "dist/app.min.js": "hello minified\n",
            ".github/workflows/ci.yml": "run: echo hello\n",
            ".hidden/notes.txt": "hello hidden\n",
            "weird.txt": "a\u2028hello\x0cstill the same line\n",
        },
    )
    return workspace


def test_content_mode_prints_path_line_text(call: Caller, project: Path) -> None:
    out = call.ok("code_search", pattern="hello")
    lines = sorted(out["output"].split("\n"))
    assert lines == [
        ".github/workflows/ci.yml:1: run: echo hello",
        "src/app.py:4:     print('hello world')",
        "src/deep/x.ts:1: const hello = 1;",
        "src/util.py:2:     return 'hello'",
        "weird.txt:1: a\u2028hello\x0cstill the same line",
    ]
    assert out["match_count"] == 5 and out["file_count"] == 5 and not out["truncated"]


def test_limits_stop_the_search_early_and_say_so(call: Caller, workspace: Path) -> None:
    write(workspace, {f"f{n}.txt": "match\n" * 40 for n in range(10)})
    out = call.ok("code_search", pattern="match", max_results_per_file=3, global_max_results=7)
    assert out["match_count"] == 7 and out["truncated"] and "limit" in out["message"]
    per_file: dict[str, int] = {}
    for line in out["output"].split("\n"):
        per_file[line.split(":")[0]] = per_file.get(line.split(":")[0], 0) + 1
    assert max(per_file.values()) <= 3


def test_files_and_count_modes(call: Caller, project: Path) -> None:
    files = call.ok("code_search", pattern="hello", output_mode="files_with_matches", cwd="src")
    assert sorted(files["output"].split("\n")) == ["src/app.py", "src/deep/x.ts", "src/util.py"]
    counts = call.ok("code_search", pattern="o", output_mode="count", glob=["*.py"])
    assert sorted(counts["output"].split("\n")) == ["src/app.py: 2", "src/util.py: 1"]


def test_glob_field_keeps_gitignore_in_force_and_anchors_at_cwd(call: Caller, project: Path) -> None:
    out = call.ok("code_search", pattern="hello", glob=["*.js"])
    assert out["output"] == "" and out["message"] == "No matches."
    out = call.ok("code_search", pattern="hello", cwd="src", glob=["deep/*.ts"])
    assert out["output"] == "src/deep/x.ts:1: const hello = 1;"
    out = call.ok("code_search", pattern="hello", glob=["!src/**"])
    assert "src/" not in out["output"] and "weird.txt" in out["output"]


def test_context_lines_and_flags(call: Caller, project: Path) -> None:
    out = call.ok("code_search", pattern="HELPER", flags=["-i"], context=1, cwd="src/util.py")
    assert out["output"] == "src/util.py:1: def helper():\nsrc/util.py-2-     return 'hello'"
    literal = call.ok("code_search", pattern="print('hello", flags=["-F"])
    assert literal["match_count"] == 1


def test_multiline_patterns_span_lines(call: Caller, project: Path) -> None:
    out = call.ok("code_search", pattern=r"def main\(\):\n\s+print", multiline=True)
    assert out["output"] == "src/app.py:3: def main():\nsrc/app.py:4:     print('hello world')"


def test_a_bad_regex_is_invalid_input_with_ripgreps_reason(call: Caller, project: Path) -> None:
    assert "regex parse error" in call.error("code_search", "invalid_input", pattern="(unclosed")


def test_a_pattern_that_looks_like_a_flag_is_searched_for(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "use --pre=cat here\n"})
    assert call.ok("code_search", pattern="--pre=cat")["output"] == "a.txt:1: use --pre=cat here"


def test_follow_is_allowed_when_every_link_stays_inside(call: Caller, workspace: Path) -> None:
    write(workspace, {"real/a.txt": "needle\n"})
    os.symlink("real", workspace / "alias")
    out = call.ok("code_search", pattern="needle", flags=["-L"])
    assert sorted(out["output"].split("\n")) == ["alias/a.txt:1: needle", "real/a.txt:1: needle"]


def test_glob_lists_matches_newest_first(call: Caller, project: Path) -> None:
    os.utime(project / "src/util.py", (1_000_000, 1_000_000))
    os.utime(project / "src/app.py", (2_000_000, 2_000_000))
    out = call.ok("glob", pattern="**/*.py")
    assert out == {"files": ["src/app.py", "src/util.py"], "count": 2, "message": "2 matching files, newest first."}


def test_glob_braces_negation_cwd_and_hidden_directories(call: Caller, project: Path) -> None:
    assert sorted(call.ok("glob", pattern="src/**/*.{py,ts}")["files"]) == [
        "src/app.py",
        "src/deep/x.ts",
        "src/util.py",
    ]
    assert call.ok("glob", pattern=["**/*.py", "!**/util.py"])["files"] == ["src/app.py"]
    assert call.ok("glob", pattern="*.ts", cwd="src/deep")["files"] == ["src/deep/x.ts"]
    assert call.ok("glob", pattern=".github/**/*.yml")["files"] == [".github/workflows/ci.yml"]
    everything = call.ok("glob", pattern="**")["files"]
    assert not any(f.startswith(("node_modules", "dist", ".hidden", ".git/")) for f in everything)


def test_glob_caps_its_list_and_says_how_many_there_were(workspace: Path) -> None:
    write(workspace, {f"f{n:02}.txt": "" for n in range(25)})
    out = Caller(workspace, {"tool_config": {"glob": {"max_files": 10}}}).ok("glob", pattern="*.txt")
    assert len(out["files"]) == 10 and out["count"] == 25 and "10 newest of 25" in out["message"]


@given(
    st.lists(st.tuples(st.sampled_from([0.0, 1.5, 2.0, 1e9, 1e9 + 0.5]), st.text(max_size=3)), max_size=60),
    st.integers(min_value=1, max_value=70),
)
def test_glob_keeps_the_newest_files_in_order_with_ties_by_name(files: list[tuple[float, str]], limit: int) -> None:
    mtimes, names = [mtime for mtime, _ in files], [name for _, name in files]
    assert _newest(mtimes, names, limit) == sorted((-mtime, name) for mtime, name in files)[:limit]


@pytest.fixture
def caches_closed() -> Iterator[None]:
    """Each cache holds an inotify instance (128 per user on these machines): freed at once, not at collection.

    Closed before too: Rigs of earlier tests not yet collected would hold the process's few places.
    """
    mtimes.CACHES.close_all()
    yield
    mtimes.CACHES.close_all()


@pytest.mark.usefixtures("caches_closed")
def test_glob_keeps_mtimes_from_a_workspaces_second_glob_on_and_never_when_told_not_to(workspace: Path) -> None:
    make_tree(workspace)
    caching, plain = Caller(workspace), Caller(workspace, {"tool_config": {"glob": {"mtime_cache": False}}})
    caching.ok("glob", pattern="**/*.py")
    plain.ok("glob", pattern="**/*.py")
    assert mtimes.CACHES.held(caching.rig.workspace) == {workspace: None}  # one-shot so far: no watch, no cache
    caching.ok("glob", pattern="**/*.py")
    plain.ok("glob", pattern="**/*.py")
    cache = mtimes.CACHES.held(caching.rig.workspace)[workspace]
    assert cache is not None and len(cache) == caching.ok("glob", pattern="**/*.py")["count"]
    assert mtimes.CACHES.held(plain.rig.workspace) == {}


@pytest.mark.usefixtures("caches_closed")
def test_globbing_many_workspaces_holds_at_most_the_process_share_of_inotify_instances(tmp_path: Path) -> None:
    held = instances_held()
    callers = []
    for index in range(2 * mtimes.MAX_CACHES):
        root = tmp_path / f"ws{index}"
        make_tree(root)
        callers.append(Caller(root))
    for _ in range(3):
        for caller in callers:
            caller.ok("glob", pattern="**/*.py")
    assert instances_held() - held <= mtimes.CACHES.limit <= mtimes.MAX_CACHES
    fresh = Caller(callers[-1].root, {"tool_config": {"glob": {"mtime_cache": False}}})
    stamp_at(callers[-1].root / "a" / "m1.py")
    assert callers[-1].ok("glob", pattern="**/*.py") == fresh.ok("glob", pattern="**/*.py")  # one without a cache


@pytest.mark.usefixtures("caches_closed")
def test_closing_a_rig_frees_its_glob_cache_at_once_and_a_later_glob_still_agrees(workspace: Path) -> None:
    make_tree(workspace)
    gc.collect()  # instances of earlier tests' unreachable stores would otherwise close mid-count
    held = instances_held()
    caching, fresh = Caller(workspace), Caller(workspace, {"tool_config": {"glob": {"mtime_cache": False}}})
    for _ in range(3):
        caching.ok("glob", pattern="**/*.py")
    assert instances_held() == held + 1
    caching.rig.close()
    assert instances_held() == held and mtimes.CACHES.held(caching.rig.workspace) == {}
    stamp_at(workspace / "d" / "m2.py")
    for _ in range(3):
        assert caching.ok("glob", pattern="**/*.py") == fresh.ok("glob", pattern="**/*.py")
    caching.rig.close()


@pytest.mark.usefixtures("caches_closed")
def test_a_repeated_glob_with_no_inotify_instance_left_lists_like_a_fresh_one(workspace: Path) -> None:
    make_tree(workspace)
    caching, fresh = Caller(workspace), Caller(workspace, {"tool_config": {"glob": {"mtime_cache": False}}})
    caching.ok("glob", pattern="**/*.py")
    with no_instance_left():
        for change in ("write", "touch -d", "delete and recreate"):
            CHANGES[change](workspace)
            assert caching.ok("glob", pattern="**/*.py") == fresh.ok("glob", pattern="**/*.py")
    CHANGES["rename over"](workspace)
    assert caching.ok("glob", pattern="**/*.py") == fresh.ok("glob", pattern="**/*.py")
    assert len(mtimes.CACHES.held(caching.rig.workspace)[workspace] or ()) > 0  # it took an instance once free


@pytest.mark.usefixtures("caches_closed")
@pytest.mark.parametrize("change", [name for name in CHANGES if name != "root replaced"])
def test_a_repeated_glob_lists_in_the_order_a_fresh_one_does_after_any_change(workspace: Path, change: str) -> None:
    make_tree(workspace)
    caching, fresh = Caller(workspace), Caller(workspace, {"tool_config": {"glob": {"mtime_cache": False}}})
    for _ in range(3):
        assert caching.ok("glob", pattern="**/*.py") == fresh.ok("glob", pattern="**/*.py")
    CHANGES[change](workspace)
    assert caching.ok("glob", pattern="**/*.py") == fresh.ok("glob", pattern="**/*.py")
    assert caching.ok("glob", pattern=["**/m1.py", "a/**"]) == fresh.ok("glob", pattern=["**/m1.py", "a/**"])


@given(
    st.lists(st.one_of(st.integers(0, 5).map(float), st.floats(0, 2e9)), min_size=1, max_size=4000),
    st.integers(min_value=1, max_value=300),
    st.sampled_from(["as drawn", "oldest first", "newest first"]),
)
def test_glob_keeps_the_newest_of_many_files_exactly_whatever_their_order(
    mtimes: list[float], limit: int, order: str
) -> None:
    if order != "as drawn":
        mtimes = sorted(mtimes, reverse=order == "newest first")  # a sample taken in strides sees a skewed tree
    names = [f"f{index}" for index in range(len(mtimes))]
    assert (
        _newest(mtimes, names, limit)
        == sorted((-mtime, name) for mtime, name in zip(mtimes, names, strict=True))[:limit]
    )


def test_glob_keeps_the_newest_exactly_when_the_newest_files_come_in_strides() -> None:
    mtimes = [2e9 + index if index % 4 == 0 and index < 2000 else float(index) for index in range(12_000)]
    names = [f"f{index:05}" for index in range(len(mtimes))]
    expected = sorted((-mtime, name) for mtime, name in zip(mtimes, names, strict=True))[:1000]
    assert _newest(mtimes, names, 1000) == expected


@given(
    st.lists(st.tuples(st.sampled_from([0.0, 1.0, 2.0, 3.0, 1e9]) | st.floats(0, 2e9), st.text(max_size=2)),
             max_size=300),
    st.integers(min_value=1, max_value=40),
    st.lists(st.integers(min_value=0, max_value=300), max_size=12),
)  # fmt: skip
@example([(3.0, "b"), (2.0, "c"), (1.0, "d"), (1.0, "e"), (2.0, "a")], 2, [4])  # a late tie with the floor wins
def test_glob_keeps_the_newest_exactly_however_ripgrep_splits_its_output_into_batches(
    files: list[tuple[float, str]], limit: int, cuts: list[int]
) -> None:
    # The floor rises batch by batch; a file older than it is dropped at once, a tie is kept to the end.
    newest = Newest(limit)
    edges = [0, *sorted(cut for cut in cuts if cut <= len(files)), len(files)]
    for start, end in itertools.pairwise(edges):
        batch = files[start:end]
        newest.add([name for _, name in batch], [mtime for mtime, _ in batch])
    assert newest.count == len(files)
    assert newest.result() == sorted((-mtime, name) for mtime, name in files)[:limit]


@pytest.mark.parametrize("name", HIDDEN_DIRS_SEARCHED)
@pytest.mark.parametrize("form", ["{}", "{}/", "/{}", "{}/**", "**/{}", "{}/**/*"])
@pytest.mark.parametrize("cwd", [None, "sub"])
def test_a_deny_glob_on_a_hidden_directory_searched_on_purpose_keeps_its_files_out(
    workspace: Path, name: str, form: str, cwd: str | None
) -> None:
    base = f"{cwd}/" if cwd else ""
    write(workspace, {f"{base}{name}/w/secret.yml": "needle\n", f"{base}open.yml": "needle\n"})
    anchored = "/" in form.rstrip("/").removeprefix("**/")  # gitignore: a slash inside anchors at the root
    deny = form.format(f"{base}{name}" if anchored else name)
    caller = Caller(workspace, {"workspace": {"deny_globs": [deny]}})
    visible = [f"{base}open.yml"]
    assert caller.ok("glob", pattern="**/*.yml", cwd=cwd)["files"] == visible
    assert caller.ok("code_search", pattern="needle", cwd=cwd)["output"] == f"{base}open.yml:1: needle"
    for mode in ("files_with_matches", "count"):
        assert name not in caller.ok("code_search", pattern="needle", cwd=cwd, output_mode=mode)["output"]
    assert f"{base}{name}/w/secret.yml" in Caller(workspace).ok("glob", pattern="**/*.yml", cwd=cwd)["files"]


def test_non_utf8_lines_are_shown_with_replacement_characters(call: Caller, workspace: Path) -> None:
    write(workspace, {"latin.txt": "caf\xe9 needle\n".encode("latin-1")})
    assert call.ok("code_search", pattern="needle")["output"] == "latin.txt:1: caf\ufffd needle"


def test_context_groups_are_separated_where_lines_are_not_adjacent(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.txt": "hit\nx\nx\nx\nx\nx\nhit\n", "b.txt": "hit\n"})
    out = call.ok("code_search", pattern="hit", context=1, cwd="a.txt")["output"]
    assert out == "a.txt:1: hit\na.txt-2- x\n--\na.txt-6- x\na.txt:7: hit"


def test_flags_as_one_string_with_a_quoted_glob_find_matches(call: Caller, project: Path) -> None:
    out = call.ok("code_search", pattern="hello", flags="-g '*.ts'")
    assert out["output"] == "src/deep/x.ts:1: const hello = 1;"
    listed = call.ok("code_search", pattern="hello", flags=["-g '*.ts'"])
    assert listed["output"] == out["output"]
    typed = call.ok("code_search", pattern="HELLO", flags="-i -w -t ts")
    assert typed["match_count"] == 1


def test_harmless_flags_are_accepted_and_named_in_the_message(call: Caller, project: Path) -> None:
    out = call.ok("code_search", pattern="helper", flags="-n --color=never --no-heading")
    assert out["match_count"] == 1 and "Ignored -n" in out["message"] and "--color" in out["message"]


def test_a_flag_string_that_runs_programs_is_denied(call: Caller, project: Path) -> None:
    assert "not allowed" in call.error("code_search", "denied", pattern="x", flags="-i --pre 'sh -c id'")
