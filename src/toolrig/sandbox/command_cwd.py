"""Where a session's command starts: the directory it asked for, or where the last one ended, opened safely.

Trust model: the directory names come from a hostile model (``cwd``) or from where a hostile command ended;
each is checked (inside the workspace, not toolrig's state, not denied) and then opened beneath its root with no
symlink followed, and the command starts from that descriptor, so what was checked is where it runs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.paths import StateDirectoryError, Workspace


def start_dir(requested: str | None, remembered: Path | None, workspace: Workspace) -> tuple[Path, int, str | None]:
    """Where the command starts: its path, a descriptor for it, and a note when it is not where the last one ended.

    The directory is checked (``resolve``: inside the workspace, not toolrig's state, not denied) and then opened
    beneath its root with no symlink followed; the command starts from that descriptor. A component swapped for
    a symlink between the two is refused, so what was checked is where the command runs. A remembered directory
    that can no longer be opened so (deleted, renamed, replaced by a file or a symlink) is not an error of this
    call: the command starts at the root, and the note says why.
    """
    note = None
    if requested is not None:
        path = workspace.resolve(requested)
        opened = _open(path, workspace)
        if isinstance(opened, str):
            raise _refused(opened, requested)
        return path, opened, None
    if remembered is not None:
        opened = _open(remembered, workspace)
        if not isinstance(opened, str):
            return remembered, opened, None
        note = (
            f"This command started at the workspace root, not in '{workspace.display(remembered)}' where the "
            f"session's last command ended: {_STANDS_IN_THE_WAY.get(opened, opened)}."
        )
    root = workspace.root
    opened = _open(root, workspace)
    if isinstance(opened, str):
        raise ToolError(ErrorType.UNAVAILABLE, f"The workspace root cannot be entered: {opened}.")
    return root, opened, note


def _open(path: Path, workspace: Workspace) -> int | str:
    """A descriptor for a checked directory (``Workspace.open_dir``), or what stands in the way."""
    try:
        return workspace.open_dir(path)
    except StateDirectoryError:  # toolrig's state under another name: a command renamed or moved it
        return "state"
    except ToolError:  # on the way: a symlink (never followed) or something that is not a directory
        return _what_is(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except PermissionError:
        return "permission"
    except OSError as exc:
        return f"it cannot be opened ({exc.strerror or exc})"


def _what_is(path: Path) -> str:
    """What a directory that could not be opened has become (for messages only: the refusal does not rest on it)."""
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        return f"it cannot be opened ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "swapped" if stat.S_ISDIR(mode) else "file"


_STANDS_IN_THE_WAY = {
    "missing": "it no longer exists (deleted or renamed)",
    "symlink": "it was replaced by a symlink, which is never followed there",
    "swapped": "a directory on the way to it was replaced by a symlink or a file",
    "file": "it was replaced by a file",
    "permission": "it cannot be entered (permission denied)",
    "state": "it is (or is inside) toolrig's own state directory under another name",
}


def _refused(what: str, spelled: str) -> ToolError:
    """The error for a cwd the call asked for that cannot be entered."""
    if what == "missing":
        return ToolError(
            ErrorType.NOT_FOUND,
            f"'{spelled}' is not a directory in the workspace.",
            "List the workspace to find the directory, or leave cwd out to start where the last command ended.",
        )
    if what == "file":
        return ToolError(
            ErrorType.INVALID_INPUT,
            f"'{spelled}' is a file, not a directory.",
            "Give a directory for cwd, or leave cwd out to start where the last command ended.",
        )
    if what in ("symlink", "swapped"):
        return ToolError(
            ErrorType.DENIED,
            f"'{spelled}' changed into a symlink (or stopped being a directory) after it was checked; nothing was run.",
            "Something else is changing the workspace. Check the path and retry once it is stable.",
        )
    if what == "permission":
        return ToolError(ErrorType.DENIED, f"'{spelled}' cannot be entered (permission denied).")
    if what == "state":
        return StateDirectoryError(Path(spelled))
    return ToolError(ErrorType.UNAVAILABLE, f"'{spelled}': {what}.")


def remember_dir(reported: str | None, used: Path, workspace: Workspace) -> Path:
    """Keep where the command ended for the session's next call, if that is still in the workspace.

    Nothing kept here is trusted later: the next call opens it again without following a symlink, so the names
    checked here are what it enters. A command that ended where it started (most do) needs no second check: the
    names of ``used`` were checked before it ran (~50 µs per command, issue 19).
    """
    final = used
    if reported and reported != str(used):
        try:
            final = workspace.resolve(reported)
            os.close(workspace.open_dir(final))  # toolrig's state is known by identity too, whatever its name
        except ToolError:
            final = used  # it left the workspace (or entered toolrig's state): the next call starts here
        except OSError:
            pass  # gone or not enterable: the next call says so when it opens it
    return final
