"""The checkpoint log: what each file held before the file tools changed it, per session, in the state dir.

Every change the file tools and apply_patch make in an agent run is recorded here *before* it is written
(``Recorder`` is the journal's ``record`` hook): the file's previous bytes (kept once, by content hash, under
``checkpoints/blobs/``) and mode, or that it did not exist, with the turn and the agent that made it. A
session's log is one append-only JSON-lines file; its line order is the order of the changes.

Trust model: the log lives in toolrig's own state, reached through ``StatePath`` (no symlink followed), but a
cloned repository could ship one, so every line read back is checked again (paths inside the workspace's
roots, hashes of the right shape) by ``rewind``; a line that is not is ignored.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolrig.errors import ToolError
from toolrig.sandbox.journal import Change
from toolrig.sandbox.paths import Workspace
from toolrig.sandbox.statedir import StatePath

DIR_NAME = "checkpoints"
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_SHA = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Limits:
    """How much the checkpoints of one workspace may keep: per file, in all, and for how long."""

    max_file_bytes: int = 16 << 20  # a larger file's earlier content is not kept: its change is not restorable
    max_total_bytes: int = 512 << 20  # past this the oldest sessions' checkpoints are dropped
    max_age_seconds: float = 30 * 86_400


@dataclass(frozen=True, slots=True)
class Mark:
    """Where a change belongs: the session being checkpointed (a subagent's: its root's), its turn, the agent."""

    session_id: str
    turn: int
    agent_id: str | None = None


def log_name(session_id: str) -> str:
    """The session's log file name: its id when plainly spelled, else a hash of it (ids are input)."""
    if _SAFE_ID.fullmatch(session_id):
        return f"{session_id}.jsonl"
    return "h-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:40] + ".jsonl"


def is_sha(value: object) -> bool:
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


class Checkpoints:
    """One workspace's checkpoint store (``.toolrig/checkpoints/``): blobs, session logs, pruning."""

    def __init__(self, workspace: Workspace, limits: Limits | None = None) -> None:
        self.workspace = workspace
        self.limits = limits or Limits()
        self.state = StatePath.of(workspace.state_dir).child(DIR_NAME)

    # ------------------------------------------------------------------ blobs

    def put_blob(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if self.state.lstat("blobs", digest[:2], digest) is None:
            self.state.write_bytes("blobs", digest[:2], digest, data=data)
        return digest

    def blob(self, digest: str) -> bytes | None:
        """A kept content, checked against its hash (a blob edited or cut short is as good as lost)."""
        if not is_sha(digest):
            return None
        try:
            data = self.state.read_bytes("blobs", digest[:2], digest)
        except (OSError, ToolError):
            return None
        return data if hashlib.sha256(data).hexdigest() == digest else None

    # ------------------------------------------------------------------ logs

    def append(self, session_id: str, records: Sequence[dict[str, Any]]) -> None:
        """Append lines to a session's log, durably (fsync) and under its lock: several writers may share it."""
        fd = self.state.open_append("sessions", log_name(session_id))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            head = [{"k": "session", "session": session_id, "t": time.time()}] if os.fstat(fd).st_size == 0 else []
            lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [*head, *records])
            os.write(fd, lines.encode("utf-8", "surrogatepass"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self, session_id: str) -> list[dict[str, Any]]:
        """The session's log lines, in order; a line cut short by a crash, or not JSON, is left out."""
        try:
            raw = self.state.read_bytes("sessions", log_name(session_id))
        except (OSError, ToolError):
            return []
        found = []
        for line in raw.split(b"\n"):
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict):
                    found.append(value)
        if found and found[0].get("k") == "session" and found[0].get("session") != session_id:
            return []  # another id hashed to the same name (or a planted file)
        return found

    def sessions(self) -> list[tuple[str, float]]:
        """Sessions with checkpoints here: (log file name, when last written)."""
        return [(name, info.st_mtime) for name, info in self.state.entries("sessions") if name.endswith(".jsonl")]

    # ------------------------------------------------------------------ limits

    def prune(self) -> None:
        """Drop logs past their age, then the oldest until the blobs fit the cap; then blobs no log names.

        Runs when a session starts its log (once per session, not per change), under an exclusive lock; a
        writer holds the same lock shared while it records, so a blob just written is never taken away.
        """
        with self._locked(fcntl.LOCK_EX | fcntl.LOCK_NB) as held:
            if not held:
                return
            now = time.time()
            logs = sorted(self.sessions(), key=lambda item: item[1])
            keep = []
            for name, mtime in logs:
                if now - mtime > self.limits.max_age_seconds:
                    self._remove("sessions", name)
                else:
                    keep.append(name)
            blobs = self._blob_sizes()
            while keep and sum(blobs.values()) > self.limits.max_total_bytes:
                self._remove("sessions", keep.pop(0))
                blobs = self._gc(keep, blobs)
            self._gc(keep, blobs)

    def _gc(self, logs: list[str], blobs: dict[str, int]) -> dict[str, int]:
        named: set[str] = set()
        for name in logs:
            try:
                raw = self.state.read_bytes("sessions", name)
            except (OSError, ToolError):
                continue
            named.update(m.decode() for m in re.findall(rb"[0-9a-f]{64}", raw))
        for digest in [d for d in blobs if d not in named]:
            self._remove("blobs", digest[:2], digest)
            blobs.pop(digest)
        return blobs

    def _blob_sizes(self) -> dict[str, int]:
        sizes = {}
        for prefix, info in self.state.entries("blobs"):
            if stat.S_ISDIR(info.st_mode):
                for name, entry in self.state.entries("blobs", prefix):
                    if is_sha(name) and stat.S_ISREG(entry.st_mode):
                        sizes[name] = entry.st_size
        return sizes

    def _remove(self, *names: str) -> None:
        with contextlib.suppress(OSError, ToolError), self.state.directory(*names[:-1], create=False) as fd:
            os.unlink(names[-1], dir_fd=fd)

    @contextlib.contextmanager
    def _locked(self, how: int) -> Iterator[bool]:
        with self.state.directory() as dir_fd:
            fd = os.open("lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        try:
            try:
                fcntl.flock(fd, how)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ recording

    def record(self, mark: Mark, tool: str, call_id: str, changes: Sequence[Change]) -> None:
        """Keep what each changed file holds now, then log the change set (before anything is written)."""
        if self.state.lstat("sessions", log_name(mark.session_id)) is None:
            self.prune()  # a session's first change: the one moment the limits are enforced
        with self._locked(fcntl.LOCK_SH):
            records = [self._file_record(mark, tool, call_id, change) for change in changes]
            self.append(mark.session_id, records)

    def record_commands(self, mark: Mark, tool: str, call_id: str, changed: list[str], complete: bool) -> None:
        """A command's changes, as a bounded look found them: reported by a rewind, never restored."""
        record = {"k": "cmd", "turn": mark.turn, "agent": mark.agent_id, "tool": tool, "call": call_id}
        self.append(mark.session_id, [{**record, "changed": changed, "complete": complete, "t": time.time()}])

    def _file_record(self, mark: Mark, tool: str, call_id: str, change: Change) -> dict[str, Any]:
        after = None
        if change.data is not None:
            after = {"sha": hashlib.sha256(change.data).hexdigest(), "size": len(change.data)}
        return {
            "k": "file",
            "turn": mark.turn,
            "agent": mark.agent_id,
            "tool": tool,
            "call": call_id,
            "path": str(change.path),
            "before": self._before(change.path),
            "after": after,
            "dirs": [str(d) for d in self._missing_parents(change.path)],
            "t": time.time(),
        }

    def _before(self, path: Path) -> dict[str, Any]:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return {"absent": True}
        except OSError as exc:
            return {"lost": f"could not be read ({exc.strerror})"}
        if not stat.S_ISREG(info.st_mode):
            return {"lost": "it was not a regular file"}
        if info.st_size > self.limits.max_file_bytes:
            return {"lost": f"it was larger ({info.st_size:,} bytes) than checkpoints keep"}
        try:
            data = self.workspace.read_bytes(path, limit=self.limits.max_file_bytes)
        except (OSError, ToolError):
            return {"lost": "it could not be read"}
        if len(data) > self.limits.max_file_bytes:
            return {"lost": "it grew past what checkpoints keep while it was read"}
        return {"sha": self.put_blob(data), "size": len(data), "mode": stat.S_IMODE(info.st_mode)}

    def _missing_parents(self, path: Path) -> list[Path]:
        """Directories a write will create, outermost first: a rewind removes them again when empty."""
        root = self.workspace.root_of(path)
        chain = []
        parent = path.parent
        while parent != root and not os.path.lexists(parent):
            chain.append(parent)
            parent = parent.parent
        return list(reversed(chain))


class Recorder:
    """The journal's ``record`` hook for one call: its checkpoint mark, tool and call id travel with it."""

    __slots__ = ("call_id", "mark", "store", "tool")

    def __init__(self, store: Checkpoints, mark: Mark, tool: str, call_id: str) -> None:
        self.store, self.mark, self.tool, self.call_id = store, mark, tool, call_id

    @classmethod
    def of(cls, workspace: Workspace, mark: Mark, tool: str, call_id: str) -> Recorder:
        return cls(Checkpoints(workspace), mark, tool, call_id)

    def __call__(self, changes: Sequence[Change]) -> None:
        self.store.record(self.mark, self.tool, self.call_id, changes)

    def commands_changed(self, changed: list[str], complete: bool) -> None:
        self.store.record_commands(self.mark, self.tool, self.call_id, changed, complete)
