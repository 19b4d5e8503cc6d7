"""Turning a session's file changes back: the workspace as it was before a turn, all or nothing.

What a rewind covers: every change the file tools (write_file, edit_file, multi_edit, apply_patch, memory
files) made in the session's agent runs and their subagents, from the chosen turn on. It restores each file's
bytes and mode, removes the files those turns created (and the directories made for them, when empty) and
brings back the ones they deleted. It does not cover what commands changed: a bounded look before and after
each command finds those, and a rewind lists them as not restorable. It refuses, naming the files, when a
file changed since the agent last wrote it (a person's edit, or a command's) or its earlier content was not
kept (too large, expired), unless forced; and while a run of the session goes, in any process (``lease``).
The files are put back through the change journal, so a rewind killed half way is finished or undone by the
next journal recovery (the next rewind, write or patch).

Trust model: the log is input (see ``log``): a path is used only if the workspace would let a tool write it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.journal import Change, Journal
from toolrig.sandbox.paths import Workspace
from toolrig.stores.checkpoints.lease import rewind_lease
from toolrig.stores.checkpoints.log import Checkpoints, is_sha

START = 0


@dataclass(frozen=True, slots=True)
class Conflict:
    path: str
    reason: str


@dataclass
class RewindPlan:
    """What a rewind to before ``turn`` would do; ``refusals`` empty means it may go ahead."""

    session_id: str
    turn: int
    start: int  # the first log line undone
    changes: list[Change] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    lost: list[Conflict] = field(default_factory=list)
    by_commands: list[str] = field(default_factory=list)
    commands_complete: bool = True
    dirs: list[Path] = field(default_factory=list)
    forced: bool = False  # conflicting files are put back too (a person's edit there is overwritten)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "to_turn": self.turn,
            "restored": self.restored,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "conflicts": [{"path": c.path, "reason": c.reason} for c in self.conflicts],
            "not_kept": [{"path": c.path, "reason": c.reason} for c in self.lost],
            "changed_by_commands": self.by_commands,
            "commands_fully_checked": self.commands_complete,
        }

    def refusal(self) -> str:
        lines = [f"Rewinding session {self.session_id} to before turn {self.turn} was refused; nothing was changed."]
        if self.conflicts:
            lines.append("These files changed since the agent last wrote them (a person's or a program's edit):")
            lines.extend(f"  {c.path}: {c.reason}" for c in self.conflicts)
        if self.lost:
            lines.append("The earlier content of these files was not kept:")
            lines.extend(f"  {c.path}: {c.reason}" for c in self.lost)
        return "\n".join(lines)


def turns(store: Checkpoints, session_id: str) -> list[dict[str, Any]]:
    """The session's turns that changed something (still live): turn, files, command changes, agents.

    ``agents``: the agent ids whose changes the turn holds (None: the session's own agent; others: subagents).
    """
    summary: dict[int, dict[str, Any]] = {}
    for _, entry in _live(store.read(session_id)):
        turn = entry["turn"]
        row = summary.setdefault(turn, {"turn": turn, "files": [], "commands_changed": [], "agents": []})
        agent = entry.get("agent") if isinstance(entry.get("agent"), str) else None
        if agent not in row["agents"]:
            row["agents"].append(agent)
        if entry["k"] == "file" and entry["path"] not in row["files"]:
            row["files"].append(entry["path"])
        elif entry["k"] == "cmd":
            row["commands_changed"].extend(p for p in entry["changed"] if p not in row["commands_changed"])
    return [summary[t] for t in sorted(summary)]


def plan(store: Checkpoints, session_id: str, turn: int | None = None, *, force: bool = False) -> RewindPlan:
    """Work out a rewind to before ``turn`` (None: before the session's last turn that changed anything).

    ``force``: files changed since (conflicts) are listed and put back all the same.
    """
    live = _live(store.read(session_id))
    if not live:
        raise ToolError(ErrorType.NOT_FOUND, f"Session {session_id!r} has no file changes to rewind.")
    if turn is None:
        turn = max(entry["turn"] for _, entry in live)
    chosen = [(i, e) for i, e in live if i >= min((i for i, e in live if e["turn"] >= turn), default=-1)]
    if not chosen or chosen[0][1]["turn"] < turn:
        raise ToolError(ErrorType.NOT_FOUND, f"Session {session_id!r} changed no file from turn {turn} on.")
    result = RewindPlan(session_id, turn, chosen[0][0], forced=force)
    first: dict[str, dict[str, Any]] = {}
    last: dict[str, dict[str, Any]] = {}
    for _, entry in chosen:
        if entry["k"] == "file":
            first.setdefault(entry["path"], entry)
            last[entry["path"]] = entry
        elif entry["k"] == "cmd":
            result.by_commands.extend(p for p in entry["changed"] if p not in result.by_commands)
            result.commands_complete &= bool(entry.get("complete", True))
    for path, entry in first.items():
        _plan_file(store, result, Path(path), entry, last[path])
    return result


def _plan_file(store: Checkpoints, result: RewindPlan, path: Path, first: dict[str, Any], last: dict[str, Any]) -> None:
    shown = store.workspace.display(path)
    try:
        resolved = store.workspace.resolve(str(path), write=True)
    except ToolError as exc:
        result.lost.append(Conflict(shown, f"it may not be written now ({exc.message})"))
        return
    if resolved != path:
        result.lost.append(Conflict(shown, f"it leads through a symlink now (to {resolved})"))
        return
    before = first["before"]
    now = _state(path)
    allowed = {_digest(last["after"]), _digest(last["before"]), _digest(before)}
    if now not in allowed:
        reason = "a command the agent ran changed it" if shown in result.by_commands else "it was edited since"
        result.conflicts.append(Conflict(shown, reason))
        if not result.forced:
            return
    if "lost" in before or not ("absent" in before or is_sha(before.get("sha"))):
        result.lost.append(Conflict(shown, str(before.get("lost", "its record is unreadable"))))
        return
    if now == _digest(before) and (now is None or _mode(path) == before.get("mode")):
        result.unchanged.append(shown)
    elif "absent" in before:
        result.changes.append(Change(path, None))
        result.removed.append(shown)
    else:
        data = store.blob(before["sha"])
        if data is None:
            result.lost.append(Conflict(shown, "its kept content is gone (pruned or damaged)"))
            return
        mode = before.get("mode")
        result.changes.append(Change(path, data, mode if isinstance(mode, int) else None))
        result.restored.append(shown)
    if "absent" in before:
        result.dirs.extend(Path(d) for d in first.get("dirs", []) if isinstance(d, str) and os.path.isabs(d))


def apply(store: Checkpoints, rewind: RewindPlan) -> RewindPlan:
    """Put the files back, all or nothing; refused (``ToolError`` conflict) when the plan has refusals."""
    if rewind.lost or (rewind.conflicts and not rewind.forced):
        raise ToolError(ErrorType.CONFLICT, rewind.refusal(), "Resolve or keep those files, then rewind again.")
    journal = Journal(store.workspace.state_dir, store.workspace.roots)
    journal.recover()
    if rewind.changes:
        journal.commit(rewind.changes, cancellable=False)
    for directory in sorted(set(rewind.dirs), key=lambda d: len(d.parts), reverse=True):
        with contextlib.suppress(OSError, ToolError):
            store.workspace.rmdir(directory)
    store.append(rewind.session_id, [{"k": "rewind", "from": rewind.start, "turn": rewind.turn, "t": time.time()}])
    return rewind


def rewind(
    workspace: Workspace, session_id: str, turn: int | None = None, *, force: bool = False, dry_run: bool = False
) -> RewindPlan:
    """The Python API: rewind ``session_id``'s file changes to before ``turn`` (0: the session's start)."""
    store = Checkpoints(workspace)
    if dry_run:
        Journal(workspace.state_dir, workspace.roots).recover()
        return plan(store, session_id, turn, force=force)
    with rewind_lease(workspace.state_dir, session_id):  # refused while a run of the session goes, anywhere
        Journal(workspace.state_dir, workspace.roots).recover()  # a rewind killed earlier is settled first
        return apply(store, plan(store, session_id, turn, force=force))


# ---------------------------------------------------------------------------------------------- reading the log


def _live(entries: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The well-formed change lines not undone by a later rewind line, with their line numbers.

    A command line of an earlier turn than the rewind's stays: a background command started then and logged
    when it ended (after later turns' lines); a rewind to a later turn leaves that turn's report standing.
    """
    undone: set[int] = set()
    for index, entry in enumerate(entries):
        start, turn = entry.get("from"), entry.get("turn")
        if entry.get("k") == "rewind" and isinstance(start, int) and 0 <= start <= index:
            undone.update(i for i in range(start, index + 1) if not _earlier_command(entries[i], turn))
    return [(i, e) for i, e in enumerate(entries) if i not in undone and _well_formed(e)]


def _earlier_command(entry: dict[str, Any], turn: object) -> bool:
    return (
        entry.get("k") == "cmd"
        and isinstance(turn, int)
        and isinstance(entry.get("turn"), int)
        and entry["turn"] < turn
    )


def _well_formed(entry: dict[str, Any]) -> bool:
    if not isinstance(entry.get("turn"), int) or isinstance(entry.get("turn"), bool):
        return False
    if entry.get("k") == "cmd":
        changed = entry.get("changed")
        return isinstance(changed, list) and all(isinstance(p, str) for p in changed)
    if entry.get("k") != "file":
        return False
    path, before, after = entry.get("path"), entry.get("before"), entry.get("after")
    if not isinstance(path, str) or not os.path.isabs(path) or os.path.normpath(path) != path:
        return False
    return isinstance(before, dict) and (after is None or (isinstance(after, dict) and is_sha(after.get("sha"))))


def _digest(state: dict[str, Any] | None) -> str | None:
    if state is None or "absent" in state:
        return None
    sha = state.get("sha")
    return sha if is_sha(sha) else "unknown"


def _state(path: Path) -> str | None:
    """The file's content hash now (None: absent; "other": not a regular file)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return "other"
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        while block := os.read(fd, 1 << 20):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None
