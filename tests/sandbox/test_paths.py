from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.forked import in_child
from toolrig.errors import ToolError
from toolrig.sandbox.atomic import atomic_write_text
from toolrig.sandbox.paths import StateDirectoryError, Workspace, is_within


def test_relative_paths_resolve_inside_the_root(workspace: Path) -> None:
    ws = Workspace(workspace)
    assert ws.resolve("a/b.txt") == workspace.resolve() / "a/b.txt"
    assert ws.display(ws.resolve("a/b.txt")) == "a/b.txt"


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "~/.ssh/id_rsa"])
def test_escapes_are_denied(workspace: Path, path: str) -> None:
    with pytest.raises(ToolError) as caught:
        Workspace(workspace).resolve(path)
    assert caught.value.error_type.value == "denied" and "outside the workspace" in caught.value.message


def test_a_symlink_out_of_the_workspace_is_denied_and_named(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / "link")
    with pytest.raises(ToolError, match="through a symlink"):
        Workspace(workspace).resolve("link/secret.txt")


def test_toolrig_state_and_home_are_never_reachable(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The workspace is the user's home directory: ~/.toolrig lies inside it and must stay out of reach.
    monkeypatch.setenv("TOOLRIG_HOME", str(workspace / "dot-toolrig"))
    ws = Workspace(workspace)
    for path in [".toolrig/config.yaml", ".toolrig/outputs/x", "dot-toolrig/config.yaml", "dot-toolrig/hooks/x.sh"]:
        with pytest.raises(ToolError, match="toolrig's own state"):
            ws.resolve(path, write=True)


def test_nul_bytes_and_empty_paths_are_refused(workspace: Path) -> None:
    ws = Workspace(workspace)
    with pytest.raises(ToolError, match="NUL"):
        ws.resolve("a\x00b")
    with pytest.raises(ToolError, match="empty"):
        ws.resolve("  ")


def test_read_only_workspace_refuses_writes(workspace: Path) -> None:
    ws = Workspace(workspace, read_only=True)
    assert ws.resolve("a.txt") == workspace.resolve() / "a.txt"
    with pytest.raises(ToolError, match="read-only"):
        ws.resolve("a.txt", write=True)


def test_extra_roots_are_allowed(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    assert Workspace(workspace, extra_roots=[extra]).resolve(str(extra / "f")) == extra.resolve() / "f"


def test_atomic_write_replaces_whole_files_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "f.sh"
    target.write_text("old")
    target.chmod(0o751)
    atomic_write_text(target, "new\r\nline")
    assert target.read_bytes() == b"new\r\nline"
    assert target.stat().st_mode & 0o777 == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["f.sh"]


# ------------------------------------------------------------------------------------------ hardening


def test_deny_globs_refuse_reads_and_writes_and_name_the_glob(workspace: Path) -> None:
    (workspace / "secrets").mkdir()
    (workspace / "secrets/key.pem").write_text("k")
    ws = Workspace(workspace, deny_globs=["secrets/", "*.pem"])
    for path in ["secrets/key.pem", "secrets", "other/x.pem"]:
        with pytest.raises(ToolError, match="deny globs") as caught:
            ws.resolve(path)
        assert caught.value.error_type.value == "denied"
    assert ws.resolve("public.txt") == workspace.resolve() / "public.txt"


def test_a_symlink_to_a_denied_file_is_denied_through_its_target(workspace: Path) -> None:
    (workspace / ".env").write_text("TOKEN=1")
    os.symlink(".env", workspace / "harmless.txt")
    ws = Workspace(workspace, deny_globs=[".env"])
    with pytest.raises(ToolError, match=r"through a symlink to '\.env'"):
        ws.resolve("harmless.txt")


def test_read_only_globs_allow_reads_and_refuse_writes_even_through_symlinks(workspace: Path) -> None:
    (workspace / "vendor").mkdir()
    (workspace / "vendor/lib.py").write_text("x")
    os.symlink("vendor/lib.py", workspace / "alias.py")
    ws = Workspace(workspace, read_only_globs=["vendor/"])
    assert ws.resolve("vendor/lib.py").name == "lib.py"
    for path in ["vendor/lib.py", "alias.py", "vendor/new.py"]:
        with pytest.raises(ToolError, match="read-only"):
            ws.resolve(path, write=True)


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".git"])
def test_git_internals_are_readable_but_never_writable(workspace: Path, path: str) -> None:
    ws = Workspace(workspace)
    ws.resolve(path)
    with pytest.raises(ToolError, match=r"\.git directory"):
        ws.resolve(path, write=True)


def test_fifos_and_device_files_are_refused(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    os.symlink("/dev/zero", workspace / "zero")
    ws = Workspace(workspace, extra_roots=["/dev"])
    with pytest.raises(ToolError, match="FIFO"):
        ws.resolve("pipe")
    with pytest.raises(ToolError, match="device file"):
        ws.resolve("zero")


def test_symlink_loops_are_refused(workspace: Path) -> None:
    os.symlink("b", workspace / "a")
    os.symlink("a", workspace / "b")
    os.symlink("self", workspace / "self")
    for path in ["a", "b/x", "self"]:
        with pytest.raises(ToolError, match="symlink loop"):
            Workspace(workspace).resolve(path)


@pytest.mark.parametrize(
    ("path", "fragment"),
    [("x" * 300, "component is longer"), ("a/" * 2100, "longer than 4096"), ("bad\udcffname", "surrogate")],
)
def test_unusable_spellings_are_invalid_input(workspace: Path, path: str, fragment: str) -> None:
    with pytest.raises(ToolError, match=fragment) as caught:
        Workspace(workspace).resolve(path)
    assert caught.value.error_type.value == "invalid_input"


def test_unicode_names_resolve_like_any_other(workspace: Path) -> None:
    (workspace / "données é中文.txt").write_text("ok")
    assert Workspace(workspace).resolve("données é中文.txt").read_text() == "ok"


def test_a_directory_swapped_for_a_symlink_after_the_check_is_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("SECRET")
    (workspace / "sub").mkdir()
    (workspace / "sub/f.txt").write_text("mine")
    ws = Workspace(workspace)
    resolved = ws.resolve("sub/f.txt", write=True)
    (workspace / "sub/f.txt").unlink()
    (workspace / "sub").rmdir()
    os.symlink(outside, workspace / "sub")  # the race: between resolve() and the open
    with pytest.raises(ToolError, match="changed into a symlink"):
        ws.read_bytes(resolved)
    with pytest.raises(ToolError, match="changed into a symlink"):
        ws.write_bytes(resolved, b"overwritten")
    assert (outside / "f.txt").read_text() == "SECRET"
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]


def test_a_file_swapped_for_a_symlink_is_not_read_through(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("SECRET")
    (workspace / "f.txt").write_text("mine")
    ws = Workspace(workspace)
    resolved = ws.resolve("f.txt")
    (workspace / "f.txt").unlink()
    os.symlink(tmp_path / "secret", workspace / "f.txt")
    with pytest.raises(ToolError, match="changed into a symlink"):
        ws.read_bytes(resolved)


def test_writing_over_a_swapped_in_symlink_replaces_the_link_not_its_target(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("SECRET")
    ws = Workspace(workspace)
    resolved = ws.resolve("f.txt", write=True)
    os.symlink(tmp_path / "secret", workspace / "f.txt")
    ws.write_bytes(resolved, b"mine")
    assert (tmp_path / "secret").read_text() == "SECRET"
    assert not (workspace / "f.txt").is_symlink() and (workspace / "f.txt").read_text() == "mine"


def test_reading_a_fifo_opened_after_the_check_does_not_block(workspace: Path) -> None:
    ws = Workspace(workspace)
    resolved = ws.resolve("later")
    os.mkfifo(workspace / "later")
    with pytest.raises(ToolError, match="FIFO"):
        ws.read_bytes(resolved)


def test_write_bytes_creates_parents_and_reports_them(workspace: Path) -> None:
    ws = Workspace(workspace)
    created: list[Path] = []
    ws.write_bytes(ws.resolve("a/b/c.txt", write=True), b"x", created_dirs=created)
    assert created == [workspace.resolve() / "a", workspace.resolve() / "a/b"]
    assert (workspace / "a/b/c.txt").read_bytes() == b"x"


def test_unlink_removes_a_name_and_refuses_directories(workspace: Path) -> None:
    ws = Workspace(workspace)
    (workspace / "d").mkdir()
    (workspace / "f").write_text("x")
    ws.unlink(ws.resolve("f"))
    assert not (workspace / "f").exists()
    with pytest.raises(IsADirectoryError):
        ws.unlink(ws.resolve("d"))


def test_hidden_and_exclusion_globs_cover_state_git_and_deny_globs(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLRIG_HOME", str(workspace / "home-state"))
    ws = Workspace(workspace, deny_globs=["*.key"])
    root = workspace.resolve()
    assert ws.hidden(root / ".toolrig/x") and ws.hidden(root / ".git/config") and ws.hidden(root / "a.key")
    assert ws.hidden(root / "home-state/config.yaml") and not ws.hidden(root / "src/a.py")
    assert ws.exclusion_globs(root) == ["*.key", "/.toolrig", "/home-state"]


SEGMENTS = ["..", ".", "a", "b", "link_out", "link_in", "loop", "", "~", "é", "x\x00y", "...", ".git", ".toolrig"]


@given(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=8), st.booleans(), st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_spelling_resolves_inside_the_workspace_or_is_refused(
    tree: tuple[Path, Path], parts: list[str], absolute: bool, write: bool
) -> None:
    root, outside = tree
    spelled = ("/" if absolute else "") + "/".join(parts)
    ws = Workspace(root)
    try:
        resolved = ws.resolve(spelled, write=write)
    except ToolError as err:
        assert err.error_type.value in {"denied", "invalid_input"} and err.message
        return
    assert is_within(resolved, root.resolve()) and not is_within(resolved, outside)
    assert not is_within(resolved, root.resolve() / ".toolrig")  # the root's state; a nested .toolrig is data
    if write:
        assert ".git" not in resolved.relative_to(root.resolve()).parts


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "a/b").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, root / "link_out")
    os.symlink("a", root / "link_in")
    os.symlink("loop", root / "loop")
    return root, outside.resolve()


def test_open_dir_opens_what_was_checked_and_refuses_a_component_swapped_for_a_symlink_since(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    ws = Workspace(workspace)
    checked = ws.resolve("a/b")
    fd = ws.open_dir(checked)
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(workspace / "a" / "b"))
    finally:
        os.close(fd)
    root_fd = ws.open_dir(ws.root)
    try:
        assert os.path.samestat(os.fstat(root_fd), os.stat(workspace))
    finally:
        os.close(root_fd)
    (tmp_path / "elsewhere" / "b").mkdir(parents=True)
    (workspace / "a").rename(workspace / "a.old")
    (workspace / "a").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ToolError) as raised:
        ws.open_dir(checked)
    assert raised.value.error_type == "denied"


def as_nobody(work: Callable[[], str]) -> str:
    """``work()`` in a forked child without root's permission overrides (tests run as root, which reads anything)."""

    def become_nobody() -> None:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)

    return in_child(become_nobody, work)


@pytest.fixture
def open_tree() -> Iterator[Path]:
    """A workspace every user may search (``tmp_path`` is root's alone)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o711)  # noqa: S103 - another user must search it: that is the test
        yield Path(tmp).resolve()


@pytest.mark.parametrize("mode", [0o111, 0o311, 0o711])
def test_a_directory_that_may_be_searched_but_not_listed_can_be_entered_and_walked_through(
    open_tree: Path, mode: int
) -> None:
    """As a shell's ``cd`` could: the start directory is opened O_PATH, never read."""
    (open_tree / "sealed" / "inner").mkdir(parents=True)
    os.chmod(open_tree / "sealed", mode)
    ws = Workspace(open_tree)

    def enter(path: Path) -> Callable[[], str]:
        def work() -> str:
            fd = ws.open_dir(path)
            os.fchdir(fd)
            return os.getcwd()

        return work

    assert as_nobody(enter(open_tree / "sealed")) == str(open_tree / "sealed")
    assert as_nobody(enter(open_tree / "sealed" / "inner")) == str(open_tree / "sealed" / "inner")


@pytest.mark.parametrize("mode", [0o700, 0o744, 0o600])
def test_a_directory_that_may_not_be_searched_is_refused_as_permission_denied(open_tree: Path, mode: int) -> None:
    (open_tree / "closed" / "inner").mkdir(parents=True)
    os.chmod(open_tree / "closed", mode)
    ws = Workspace(open_tree)
    for path in (open_tree / "closed", open_tree / "closed" / "inner"):
        assert as_nobody(lambda path=path: str(ws.open_dir(path))).startswith("PermissionError"), path


@settings(max_examples=40, deadline=None)
@given(
    depth=st.integers(min_value=0, max_value=3),
    name=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="/"), min_size=1).filter(
        lambda n: n not in {".", "..", ".toolrig"}
    ),
    below=st.integers(min_value=0, max_value=2),
)
def test_the_state_directory_renamed_or_moved_anywhere_is_never_a_start_directory(
    depth: int, name: str, below: int
) -> None:
    """``resolve`` knows ``.toolrig`` by name; ``open_dir`` knows it by identity, whatever a command renamed it to."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / ".toolrig").mkdir()
        (root / "sibling").mkdir()
        ws = Workspace(root)
        parent = root.joinpath(*[f"d{index}" for index in range(depth)])
        parent.mkdir(parents=True, exist_ok=True)
        moved = parent / name
        (root / ".toolrig").rename(moved)
        inside = moved.joinpath(*[f"s{index}" for index in range(below)])
        inside.mkdir(parents=True, exist_ok=True)
        with pytest.raises(StateDirectoryError):
            os.close(ws.open_dir(inside))
        (root / ".toolrig").mkdir()  # toolrig makes a new one; that one is refused too, by name and by identity
        with pytest.raises(StateDirectoryError):
            os.close(ws.open_dir(root / ".toolrig"))
        os.close(ws.open_dir(root / "sibling"))
        os.close(ws.open_dir(parent))


def test_the_state_directory_stays_refused_however_many_times_commands_renamed_it_since(tmp_path: Path) -> None:
    """A command at a time may rename ``.toolrig`` and make a new one; every start sees one identity more.

    Only the newest ``MAX_STATE_IDENTITIES`` are held open; an older one that still exists is remembered all the
    same, or 17 commands (``mv .toolrig sN && mkdir .toolrig``) push toolrig's real state directory out of memory
    and the next command may start in it (keeprev F2).
    """
    from toolrig.sandbox.paths import MAX_STATE_IDENTITIES

    root = tmp_path.resolve()
    (root / ".toolrig").mkdir()
    (root / ".toolrig" / "audit.db").write_text("the live state")
    ws = Workspace(root)
    open_before = len(os.listdir("/proc/self/fd"))
    renamed = [root / f"s{index}" for index in range(2 * MAX_STATE_IDENTITIES + 3)]
    for moved in renamed:
        (root / ".toolrig").rename(moved)
        (root / ".toolrig").mkdir()
        os.close(ws.open_dir(root))  # a command starts: the new one is seen
    for moved in renamed:
        with pytest.raises(StateDirectoryError):
            os.close(ws.open_dir(moved))
    assert len(os.listdir("/proc/self/fd")) - open_before <= MAX_STATE_IDENTITIES + 1  # + 1: the fresh .toolrig


@settings(max_examples=60, deadline=None)
@given(
    user=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="/"), max_size=40),
    rest=st.sampled_from(["", "/", "/x", "/../y"]),
)
def test_a_tilde_path_is_resolved_or_refused_never_a_crash(user: str, rest: str) -> None:
    """``~name`` of no user made ``Path.expanduser`` raise RuntimeError: ``internal`` (keeprev F3)."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(tmp)
        try:
            resolved = ws.resolve(f"~{user}{rest}")
        except ToolError as exc:
            assert exc.error_type.value in {"denied", "invalid_input"}, exc
        else:
            assert is_within(resolved, ws.root)
