from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.sandbox.ripgrep import RgRun, base_argv, exclusions, glob_filter, list_files, rg_binary


def test_the_binary_comes_from_the_installed_ripgrep_wheel() -> None:
    binary = Path(rg_binary())
    assert binary.parent == Path(sysconfig.get_path("scripts")).resolve() or "site-packages" in str(binary)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("ripgrep 14.1.0")


def test_positive_globs_become_a_file_type_and_directory_parts_a_check() -> None:
    selection = glob_filter(["src/**/*.{py,pyi}", "!src/gen/**"], ".")
    assert "--type-add=toolrigglob:*.{py,pyi}" in selection.argv and "--glob=!src/gen/**" in selection.argv
    assert selection.accepts("src/a/b.py") and selection.accepts("./src/b.pyi")
    assert not selection.accepts("lib/b.py") and not selection.accepts("src/.hidden/b.py")


def test_list_files_yields_every_file_in_batches_and_stops_when_closed(tmp_path: Path) -> None:
    for index in range(300):
        (tmp_path / f"file-with-a-longish-name-{index:04}.txt").write_text("x")
    batches = list(list_files(tmp_path, ["."]))
    assert sorted(name for batch, _ in batches for name in batch) == sorted(
        f"file-with-a-longish-name-{index:04}.txt" for index in range(300)
    )
    listing = list_files(tmp_path, ["."])
    next(listing)
    listing.close()  # kills ripgrep; no warning about an unwaited process (warnings are errors)


_component = st.sampled_from(["src", "a", ".github", ".hidden", "x.py", ".env", "b.txt", "..", "."])


@given(
    st.lists(st.lists(_component, min_size=1, max_size=4).map("/".join), max_size=30),
    st.sampled_from([["**/*.py"], ["*"], ["src/**/*.py"], [".github/**"], ["!a/**"], ["**/*.py", "!src/**"]]),
    st.booleans(),
)
def test_a_batch_is_kept_exactly_as_name_by_name_checks_would_keep_it(
    names: list[str], patterns: list[str], hidden: bool
) -> None:
    selection = glob_filter(patterns, ".", hidden=hidden)
    assert selection.keep(names) == [name for name in names if selection.accepts(name)]


_names = st.lists(st.lists(_component.filter(lambda part: part not in ("..", ".")), min_size=1, max_size=4),
                  min_size=1, max_size=40)  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(_names, st.sampled_from([["."], [".", ".github"], [".github", "."]]))
def test_a_batch_said_plain_has_no_hidden_name_and_is_kept_whole(
    tmp_path_factory: pytest.TempPathFactory, parts: list[list[str]], paths: list[str]
) -> None:
    root = tmp_path_factory.mktemp("plain")
    for components in parts:
        path = root.joinpath(*components)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")
        except OSError:
            continue  # a name used as both a file and a directory: the first use stays
    if not (root / ".github").is_dir():
        paths = ["."]
    selection = glob_filter(["*"], ".")
    listed = list(list_files(root, paths, hidden=False))
    for names, plain in listed:
        hidden = any(part.startswith(".") for name in names for part in name.split("/"))
        assert plain == (not hidden)
        assert selection.keep(names, plain) == [name for name in names if selection.accepts(name)]
    assert all(not name.startswith("./") for names, _ in listed for name in names)


@pytest.fixture(scope="module")
def hidden_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hidden-tree")
    for rel in (".git/x.py", ".toolrig/y.py", "a/.env", "a/.git/z.py", "a/b.py", ".github/ok.py", ".github/.git/q.py",
                ".github/.env/r.py", ".env", "c/.secret/s.py", "c/t.py", ".hidden/u.py"):  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    return root


_deny = st.sampled_from([".env", "/.toolrig", ".git/", "**/.secret", ".*", ".github", "/.github", "a", ".", "..",
                         "**/.env", ".gi*", "c/.secret", "/a/.env", "*.py", ".{env,secret}"])  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(_deny, max_size=4))
def test_globs_left_out_without_hidden_would_have_excluded_nothing(hidden_tree: Path, deny: list[str]) -> None:
    listed = sorted(name for batch, _ in list_files(hidden_tree, [".", ".github"], deny=deny) for name in batch)
    argv = [*base_argv(), "--files", "--null", *exclusions(deny), "--", ".", ".github"]
    with RgRun(argv, hidden_tree, 30.0) as run:
        everything = run.stdout.read().decode()
    assert listed == sorted(name.removeprefix("./") for name in everything.split("\0") if name)


def test_no_listed_name_keeps_a_leading_dot_slash_whichever_search_path_prints_first(tmp_path: Path) -> None:
    for rel in (".github/w/ci.yml", "a/b.py", "c.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    for paths in ([".github", "."], [".", ".github"]):
        names = sorted(name for batch, _ in list_files(tmp_path, paths) for name in batch)
        assert names == [".github/w/ci.yml", "a/b.py", "c.txt"]


def test_hidden_paths_are_carved_out_of_ripgreps_grant_in_the_kernel(tmp_path: Path) -> None:
    """Without any exclusion glob, ripgrep still cannot read a deny-globbed file or toolrig's state (Landlock)."""
    from toolrig.sandbox.confine.view import hidden_below
    from toolrig.sandbox.paths import Workspace
    from toolrig.sandbox.ripgrep import confine_to

    root = tmp_path.resolve()
    (root / "deep").mkdir()
    for name in (".env", "deep/.env", "deep/ok.txt", "ok.txt"):
        (root / name).write_text("NEEDLE")
    (root / ".toolrig").mkdir()
    (root / ".toolrig" / "state").write_text("NEEDLE")
    hidden = hidden_below(Workspace(root, deny_globs=[".env"]), root)
    assert sorted(hidden) == sorted(str(root / p) for p in (".toolrig", ".env", "deep/.env"))
    argv = [*base_argv(hidden=True), "--no-ignore", "-l", "NEEDLE", "."]
    with RgRun(argv, root, 10.0, confine_to(root, root, hidden=hidden)) as run:
        found = sorted(line.decode().strip().removeprefix("./") for line in run.lines())
    assert found == ["deep/ok.txt", "ok.txt"], (found, run.errors)
    assert run.confined
