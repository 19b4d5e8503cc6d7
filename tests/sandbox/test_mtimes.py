from __future__ import annotations

import contextlib
import gc
import itertools
import mmap
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.inotify import instances_held, no_instance_left
from toolrig.sandbox.mtimes import (
    CACHES,
    MAX_CACHES,
    Caches,
    MtimeCache,
    cache_for,
    filesystem_type,
    instance_share,
    lstat_mtimes,
)
from toolrig.tools.search import _newest

_clock = itertools.count(1_000_000_000, 7)  # every utime below sets a time no other file has


def stamp_at(path: Path) -> None:
    when = next(_clock)
    os.utime(path, (when, when), follow_symlinks=False)


def make_tree(root: Path) -> None:
    for directory in ("", "a", "a/b", "a/b/c", "d", "e/f"):
        for index in range(3):
            path = root / directory / f"m{index}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{directory} {index}\n")
            stamp_at(path)


def listing(root: Path) -> list[str]:
    """What ripgrep would list (every file and symlink), relative to the root."""
    names = []
    for directory, _, files in os.walk(root):
        for name in files:
            names.append(os.path.relpath(os.path.join(directory, name), root))
    return sorted(names)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    make_tree(root)
    return root


def assert_exact(cache: MtimeCache, root: Path) -> None:
    """The cache gives what a fresh lstat gives, value for value, and so exactly the same newest-first order."""
    names = listing(root)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        cached = cache.stamp(list(names), fd)
        fresh = lstat_mtimes(list(names), fd)
    finally:
        os.close(fd)
    assert cached == fresh
    assert _newest(cached[1], cached[0], 5) == _newest(fresh[1], fresh[0], 5)


@pytest.fixture
def cache(tree: Path) -> Iterator[MtimeCache]:
    opened = MtimeCache(tree)
    assert opened.usable, filesystem_type(tree)
    assert_exact(opened, tree)  # warm: every file cached, every directory watched
    assert len(opened) == len(listing(tree))
    yield opened
    opened.close()


def _write(root: Path) -> None:
    with open(root / "a/b/m1.py", "a") as handle:
        handle.write("more\n")


def _write_through_mmap(root: Path) -> None:
    """The mtime changes on the page fault, with no event; the close of the descriptor afterwards is one."""
    fd = os.open(root / "e/f/m0.py", os.O_RDWR)
    try:
        with mmap.mmap(fd, 1) as mapped:
            mapped[0:1] = b"#"
    finally:
        os.close(fd)


def _truncate(root: Path) -> None:
    os.truncate(root / "a/m0.py", 0)


def _touch_d(root: Path) -> None:
    stamp_at(root / "d/m2.py")


def _rename_over(root: Path) -> None:
    os.replace(root / "a/b/c/m0.py", root / "a/b/c/m1.py")


def _atomic_save(root: Path) -> None:
    temporary = root / "e/f/.m1.py.tmp"
    temporary.write_text("saved\n")
    stamp_at(temporary)
    os.replace(temporary, root / "e/f/m1.py")


def _move_across_directories(root: Path) -> None:
    stamp_at(root / "d/m0.py")
    os.replace(root / "d/m0.py", root / "a/b/m2.py")


def _chmod(root: Path) -> None:
    os.chmod(root / "m1.py", 0o600)


def _delete_and_recreate(root: Path) -> None:
    (root / "m2.py").unlink()
    (root / "m2.py").write_text("again\n")
    stamp_at(root / "m2.py")


def _directory_renamed(root: Path) -> None:
    os.rename(root / "a/b", root / "a/z")
    (root / "a/b").mkdir()
    for index in range(3):
        (root / f"a/b/m{index}.py").write_text("new\n")
        stamp_at(root / f"a/b/m{index}.py")


def _parent_directory_renamed(root: Path) -> None:
    os.rename(root / "e", root / "e2")
    shutil.copytree(root / "e2", root / "e")  # the old names again, with the copies' own mtimes
    for path in (root / "e").rglob("*.py"):
        stamp_at(path)


def _directory_deleted_and_remade(root: Path) -> None:
    shutil.rmtree(root / "d")
    (root / "d").mkdir()
    (root / "d/m0.py").write_text("fresh\n")
    stamp_at(root / "d/m0.py")


def _new_directory(root: Path) -> None:
    (root / "a/new/deeper").mkdir(parents=True)
    (root / "a/new/deeper/n.py").write_text("n\n")
    stamp_at(root / "a/new/deeper/n.py")


def _hard_link_written_through(root: Path) -> None:
    os.link(root / "a/m1.py", root / "d/linked.py")
    with open(root / "d/linked.py", "a") as handle:
        handle.write("through the other name\n")


def _replaced_by_a_symlink(root: Path) -> None:
    (root / "a/b/c/m2.py").unlink()
    os.symlink("../m0.py", root / "a/b/c/m2.py")
    stamp_at(root / "a/b/c/m2.py")


def _root_replaced(root: Path) -> None:
    os.rename(root, root.with_name("old-tree"))
    make_tree(root)  # the same names, other mtimes, another directory at the root's path


CHANGES: dict[str, Callable[[Path], None]] = {
    "write": _write,
    "write through mmap": _write_through_mmap,
    "truncate": _truncate,
    "touch -d": _touch_d,
    "rename over": _rename_over,
    "atomic save": _atomic_save,
    "move across directories": _move_across_directories,
    "chmod": _chmod,
    "delete and recreate": _delete_and_recreate,
    "directory renamed": _directory_renamed,
    "parent directory renamed": _parent_directory_renamed,
    "directory deleted and remade": _directory_deleted_and_remade,
    "new directory": _new_directory,
    "hard link written through": _hard_link_written_through,
    "replaced by a symlink": _replaced_by_a_symlink,
    "root replaced": _root_replaced,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_every_kind_of_change_gives_what_a_fresh_lstat_gives(
    cache: MtimeCache, tree: Path, change: Callable[[Path], None]
) -> None:
    change(tree)
    assert_exact(cache, tree)
    assert_exact(cache, tree)  # and again, once refilled


@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(CHANGES)), st.booleans()),  # a change, and whether a listing follows it
        min_size=1,
        max_size=8,
    )
)
@settings(max_examples=40)
def test_any_sequence_of_changes_gives_what_a_fresh_lstat_gives(steps: list[tuple[str, bool]]) -> None:
    with tempfile.TemporaryDirectory() as base:
        root = Path(base) / "tree"
        make_tree(root)
        cache = MtimeCache(root)
        try:
            assert_exact(cache, root)
            for name, look in steps:
                if name == "root replaced" and root.with_name("old-tree").exists():
                    shutil.rmtree(root.with_name("old-tree"))
                with contextlib.suppress(OSError):  # an earlier step took away what this one changes
                    CHANGES[name](root)  # (what it did do before failing still counts)
                if look:
                    assert_exact(cache, root)
            assert_exact(cache, root)
        finally:
            cache.close()


def test_a_warm_cache_answers_without_a_syscall_per_file_and_forgets_only_what_changed(
    cache: MtimeCache, tree: Path
) -> None:
    _write(tree)
    assert_exact(cache, tree)
    assert len(cache) == len(listing(tree)) and cache.forgotten == 0


def test_a_directory_moved_away_forgets_everything_then_refills(cache: MtimeCache, tree: Path) -> None:
    _directory_renamed(tree)
    assert_exact(cache, tree)
    assert cache.forgotten == 1 and len(cache) == len(listing(tree))


def test_a_queue_overflow_forgets_everything(cache: MtimeCache, tree: Path) -> None:
    first, second = tree / "m0.py", tree / "m1.py"
    for _ in range(9000):  # alternating names: the kernel merges only identical consecutive events
        os.utime(first)
        os.utime(second)
    stamp_at(first)
    assert_exact(cache, tree)
    assert cache.forgotten == 1


def test_files_with_a_second_name_are_never_cached(cache: MtimeCache, tree: Path) -> None:
    os.link(tree / "d/m1.py", tree / "second-name")
    cache.close()
    fresh = MtimeCache(tree)
    assert_exact(fresh, tree)
    assert "d/m1.py" not in fresh._mtimes and "second-name" not in fresh._mtimes
    with open(tree / "second-name", "a") as handle:
        handle.write("written through the other name\n")
    assert_exact(fresh, tree)
    fresh.close()


def test_past_the_watch_limit_files_in_unwatched_directories_are_lstat_ed_every_time(tree: Path) -> None:
    cache = MtimeCache(tree, max_watches=3)  # the root and two more
    assert_exact(cache, tree)
    assert len(cache._dirs) == 3 and 0 < len(cache) < len(listing(tree))
    assert {name.rpartition("/")[0] for name in cache._mtimes} <= set(cache._dirs)
    for change in (_write, _touch_d, _atomic_save, _rename_over):
        change(tree)
        assert_exact(cache, tree)
    cache.close()


def test_concurrent_listings_and_changes_end_exact(cache: MtimeCache, tree: Path) -> None:
    names = listing(tree)
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    errors: list[BaseException] = []

    def look() -> None:
        try:
            for _ in range(200):
                cache.stamp([name for name in names if (tree / name).exists()], fd)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=look) for _ in range(3)]
    for thread in threads:
        thread.start()
    for _ in range(50):
        _write(tree)
        _touch_d(tree)
        _atomic_save(tree)
    for thread in threads:
        thread.join()
    os.close(fd)
    assert not errors
    assert_exact(cache, tree)


def test_a_root_on_a_file_system_inotify_cannot_see_fully_is_never_cached() -> None:
    assert filesystem_type(Path("/proc/self")) == "proc"
    cache = MtimeCache(Path("/proc/self"))
    assert not cache.usable
    fd = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert cache.stamp(["status"], fd)[0] == ["status"]
    finally:
        os.close(fd)
    assert len(cache) == 0


def test_a_workspace_gets_its_cache_on_its_second_listing(tree: Path) -> None:
    owner, other = Owner(), Owner()
    CACHES.close_all()  # Rigs of earlier tests not collected yet may hold every place
    assert cache_for(owner, tree) is None  # a one-shot listing pays for nothing
    second = cache_for(owner, tree)
    assert second is not None and cache_for(owner, tree) is second
    assert cache_for(other, tree) is None
    assert cache_for(owner, tree / "a") is None
    CACHES.release(owner)


def test_a_directory_above_the_root_replaced_is_noticed(tmp_path: Path) -> None:
    root = tmp_path / "outer" / "tree"
    make_tree(root)
    cache = MtimeCache(root)
    assert_exact(cache, root)
    os.rename(tmp_path / "outer", tmp_path / "outer-old")  # no watch sees this: the root's own did not move
    make_tree(root)
    assert_exact(cache, root)
    assert cache.forgotten == 1
    cache.close()


class Owner:
    """Stands for a workspace: any object that can be weakly referenced."""


def test_a_process_holds_at_most_its_share_of_caches_and_an_idle_one_gives_its_place_up(tree: Path) -> None:
    now = [0.0]
    caches = Caches(2, idle_seconds=30, clock=lambda: now[0])
    a, b, c = Owner(), Owner(), Owner()
    for owner in (a, b, c):
        assert caches.cache_for(owner, tree) is None  # first listings: nothing
    kept_a, kept_b = caches.cache_for(a, tree), caches.cache_for(b, tree)
    assert kept_a is not None and kept_b is not None
    now[0] = 10
    assert caches.cache_for(c, tree) is None  # both places busy: c lists with lstat, nobody is evicted
    assert len(caches) == 2 and caches.cache_for(a, tree) is kept_a
    now[0] = 35
    assert caches.cache_for(a, tree) is kept_a  # a stays in use; b has been idle since 0
    kept_c = caches.cache_for(c, tree)
    assert kept_c is not None and len(caches) == 2
    assert not kept_b.usable and caches.held(b) == {tree: None}  # closed, and its root starts over
    now[0] = 50
    assert caches.cache_for(b, tree) is None  # a used at 35, c at 35: nobody idle for 30 s yet
    caches.close_all()


def test_a_released_or_collected_owner_frees_its_caches_at_once(tree: Path) -> None:
    caches = Caches(4)
    owner, gone = Owner(), Owner()
    for who in (owner, gone, owner, gone):
        caches.cache_for(who, tree)
    cache, other = caches.held(owner)[tree], caches.held(gone)[tree]
    assert cache is not None and other is not None
    assert_exact(cache, tree)
    assert_exact(other, tree)
    gc.collect()  # instances of earlier tests' unreachable stores would otherwise close mid-count
    held = instances_held()
    caches.release(owner)
    assert not cache.usable and instances_held() == held - 1 and len(caches) == 1
    assert caches.cache_for(owner, tree) is None  # released: its next listing is a first one again
    del gone, other, who
    assert len(caches) == 0 and instances_held() == held - 2  # freed with its owner, not at the next collection


@pytest.mark.parametrize(("limit", "share"), [("128\n", MAX_CACHES), ("64", 2), ("8", 0), ("", MAX_CACHES)])
def test_the_share_of_caches_is_at_most_a_32nd_of_the_users_inotify_instances(
    tmp_path: Path, limit: str, share: int
) -> None:
    path = tmp_path / "max_user_instances"
    path.write_text(limit)
    assert instance_share(path) == share
    assert instance_share(tmp_path / "missing") == MAX_CACHES
    assert Caches(0).cache_for(Owner(), tmp_path) is None


def test_with_no_instance_left_a_cache_lists_exactly_and_takes_one_once_one_is_free(tree: Path) -> None:
    cache = MtimeCache(tree)
    try:
        with no_instance_left():
            assert_exact(cache, tree)  # lstat-ed, no error
            (tree / "a" / "m0.py").write_text("changed\n")
            assert_exact(cache, tree)  # (the pool is the user's: another process may free one meanwhile)
        assert_exact(cache, tree)  # an instance is free again: the cache fills
        assert len(cache) == len(listing(tree))
        stamp_at(tree / "a" / "m1.py")
        assert_exact(cache, tree)
    finally:
        cache.close()
