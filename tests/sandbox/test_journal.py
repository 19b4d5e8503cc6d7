"""The change journal: all or nothing across files, even when the writer is killed at any point."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import journal_child
from toolrig.sandbox import journal as journal_module
from toolrig.sandbox.journal import Change, Journal

# ---------------------------------------------------------------- helpers


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (None) below root, toolrig's own state left out."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".toolrig":
            continue
        out[rel.as_posix()] = None if path.is_dir() else path.read_bytes()
    return out


def leftovers(root: Path) -> list[str]:
    temps = [p.name for p in root.rglob("*") if p.name.endswith(".toolrig-tmp")]
    records = [p.name for p in (root / ".toolrig" / "journal").glob("*")] if (root / ".toolrig").exists() else []
    return temps + records


def make_journal(root: Path) -> Journal:
    return Journal(root / ".toolrig", [root])


def three_file_change(root: Path) -> list[Change]:
    """A modified file, a new file in two new directories, and a removal."""
    (root / "a.txt").write_bytes(b"a before\n" * 1000)
    (root / "gone.txt").write_bytes(b"delete me\n")
    return [
        Change(root / "a.txt", b"a after\n" * 1000),
        Change(root / "new" / "deep" / "b.txt", b"b after\n"),
        Change(root / "gone.txt", None),
    ]


# ---------------------------------------------------------------- in-process behaviour


def test_a_commit_applies_every_change_and_leaves_no_record_or_temp(tmp_path: Path) -> None:
    changes = three_file_change(tmp_path)
    make_journal(tmp_path).commit(changes)
    assert tree(tmp_path) == {
        "a.txt": b"a after\n" * 1000,
        "new": None,
        "new/deep": None,
        "new/deep/b.txt": b"b after\n",
    }
    assert leftovers(tmp_path) == []


def test_a_failure_before_the_commit_point_removes_temps_and_new_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changes = three_file_change(tmp_path)
    before = tree(tmp_path)
    real_stage = journal_module.stage
    calls = []

    def stage(*args: Any) -> None:
        calls.append(args)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_stage(*args)

    monkeypatch.setattr(journal_module, "stage", stage)
    with pytest.raises(OSError, match="No space"):
        make_journal(tmp_path).commit(changes)
    assert tree(tmp_path) == before and leftovers(tmp_path) == []


def _record(root: Path, name: str, body: dict[str, Any]) -> None:
    directory = root / ".toolrig" / "journal"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(json.dumps(body))
    (directory / name).chmod(0o600)


def test_recovery_ignores_records_naming_paths_outside_the_workspace_or_foreign_temps(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("keep")
    (root / "inside.txt").write_text("keep")
    (root / ".evil").write_text("not ours")
    tx = "0123456789abcdef"
    _record(
        root,
        f"{tx}.commit",
        {
            "tx": tx,
            "entries": [
                {"path": str(tmp_path / "outside.txt"), "temp": None},
                {"path": str(root / "sub" / ".." / "inside.txt"), "temp": None},
                {"path": str(root / "inside.txt"), "temp": ".evil"},
                {"path": str(root / ".toolrig" / "journal" / "x"), "temp": None},
            ],
            "dirs": [str(tmp_path)],
        },
    )
    assert make_journal(root).recover() == ["finished an interrupted change of 0 file(s)"]
    assert (tmp_path / "outside.txt").read_text() == "keep" and (root / "inside.txt").read_text() == "keep"
    assert (root / ".evil").read_text() == "not ours"


def test_a_record_readable_by_others_as_a_git_checkout_makes_it_is_never_acted_on(tmp_path: Path) -> None:
    (tmp_path / "victim.txt").write_text("keep")
    tx = "00112233445566aa"
    _record(
        tmp_path,
        f"{tx}.commit",
        {"tx": tx, "entries": [{"path": str(tmp_path / "victim.txt"), "temp": None}], "dirs": []},
    )
    (tmp_path / ".toolrig" / "journal" / f"{tx}.commit").chmod(0o644)
    assert make_journal(tmp_path).recover() == []
    assert (tmp_path / "victim.txt").read_text() == "keep"


def test_a_record_whose_writer_is_alive_is_left_alone(tmp_path: Path) -> None:
    import fcntl

    (tmp_path / "a.txt").write_text("before")
    tx = "fedcba9876543210"
    temp = f".a.txt.{tx}.toolrig-tmp"
    (tmp_path / temp).write_text("after")
    _record(
        tmp_path, f"{tx}.commit", {"tx": tx, "entries": [{"path": str(tmp_path / "a.txt"), "temp": temp}], "dirs": []}
    )
    fd = os.open(tmp_path / ".toolrig" / "journal" / f"{tx}.commit", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the writer holds its record while it works
        assert make_journal(tmp_path).recover() == []
        assert (tmp_path / "a.txt").read_text() == "before"
    finally:
        os.close(fd)
    assert make_journal(tmp_path).recover() == ["finished an interrupted change of 1 file(s)"]
    assert (tmp_path / "a.txt").read_text() == "after" and leftovers(tmp_path) == []


# ---------------------------------------------------------------- kill -9 at every step, deterministically

_COUNTED = ("open", "write", "fsync", "rename", "replace", "unlink", "mkdir", "rmdir", "fchmod")


def _run_killed_at(step: int, action: Callable[[], None]) -> int:
    """Fork; the child runs ``action`` and SIGKILLs itself at its ``step``-th file-system call.

    Returns how many calls the child made when it was not killed (``step`` 0), else the signal.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        count = [0]
        for name in _COUNTED:
            real = getattr(os, name)

            def counted(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                count[0] += 1
                if count[0] == step:
                    os.kill(os.getpid(), signal.SIGKILL)
                return _real(*args, **kwargs)

            setattr(os, name, counted)
        try:
            action()
        finally:
            os.write(write_end, str(count[0]).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        reported = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return int(reported or 0)


def test_a_kill_at_any_step_of_a_commit_recovers_to_wholly_before_or_wholly_after(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    changes = three_file_change(root)
    make_journal(root).directory.mkdir(parents=True)
    before = tree(root)
    calls = _run_killed_at(0, lambda: make_journal(root).commit(changes))
    assert calls > 10
    after = tree(root)
    assert after != before
    outcomes = set()
    for step in range(1, calls + 1):
        for path in list(root.iterdir()):  # back to the state before
            if path.is_dir() and path.name != ".toolrig":
                shutil.rmtree(path)
        three_file_change(root)
        assert _run_killed_at(step, lambda: make_journal(root).commit(changes)) == -signal.SIGKILL, step
        make_journal(root).recover()
        state = tree(root)
        assert state in (before, after), f"killed at step {step} of {calls}: half applied"
        assert leftovers(root) == [], f"killed at step {step}"
        outcomes.add("after" if state == after else "before")
    assert outcomes == {"before", "after"}


# ---------------------------------------------------------------- kill -9 at random points, through the tool

_FILES = ("a.txt", "b.txt", "c.txt")
_LINES = 20_000


def _content(name: str, version: int) -> bytes:
    return f"VERSION-{version}\n".encode() + f"{name} line of filler text for a large file\n".encode() * _LINES


def _patch(version: int) -> str:
    sections = "".join(f"*** Update File: {n}\n@@\n-VERSION-{version}\n+VERSION-{version + 1}\n" for n in _FILES)
    return f"*** Begin Patch\n{sections}*** End Patch"


def test_fifty_kills_during_a_three_file_patch_leave_every_file_before_or_every_file_after(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for name in _FILES:
        (root / name).write_bytes(_content(name, 0))
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.support.journal_child"])
    rng = random.Random(16)  # noqa: S311  (kill points, not secrets)

    def trial(version: int, delay: float | None) -> float:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=journal_child.apply, args=(str(root), _patch(version), send))
        process.start()
        send.close()
        assert receive.poll(60), "the child never got ready"
        receive.recv()
        started = time.perf_counter()
        if delay is None:
            process.join(60)
            assert process.exitcode == 0
        else:
            time.sleep(delay)  # a random point in the patch: the assertions below do not depend on where it lands
            process.kill()  # SIGKILL (a child that already finished is simply gone)
            process.join(60)
        receive.close()
        return time.perf_counter() - started

    version = 0
    duration = trial(version, None)  # one whole run, to know how long a patch takes
    version += 1
    recovered = []
    for _ in range(50):
        trial(version, rng.uniform(0, duration * 1.2))
        recovered += make_journal(root).recover()  # what the next apply_patch does first
        heads = {name: (root / name).read_bytes() for name in _FILES}
        now = {int(data[8 : data.index(b"\n")]) for data in heads.values()}
        assert len(now) == 1, f"half applied: {now}"
        (current,) = now
        assert current in (version, version + 1)
        assert all(heads[name] == _content(name, current) for name in _FILES)
        assert leftovers(root) == []
        version = current
    # Where the kills land is up to the scheduler: say it, assert nothing about it.
    print(f"50 kills: reached version {version}; {len(recovered)} interrupted change(s) recovered: {recovered}")


def test_a_single_write_killed_at_any_step_leaves_no_temp_after_the_next_write(tmp_path: Path) -> None:
    from toolrig.sandbox.paths import Workspace

    root = tmp_path / "ws"
    root.mkdir()
    target = root / "big.txt"
    target.write_bytes(b"before\n" * 10_000)
    workspace = Workspace(root)
    workspace.write_bytes(root / "warm.txt", b"x")  # the journal directory exists from here on
    calls = _run_killed_at(0, lambda: workspace.write_bytes(target, b"after\n" * 10_000))
    for step in range(1, calls + 1):
        target.write_bytes(b"before\n" * 10_000)
        _run_killed_at(step, lambda: workspace.write_bytes(target, b"after\n" * 10_000))
        assert target.read_bytes() in (b"before\n" * 10_000, b"after\n" * 10_000)
        workspace.write_bytes(root / "next.txt", b"next")  # any later write sweeps what a dead writer left
        assert leftovers(root) == [], f"killed at step {step} of {calls}"
