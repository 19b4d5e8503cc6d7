"""A note for a command that ran into the sandbox's boundary, so the model asks instead of retrying around it.

The command's result is kept as it is; the note is found in its stderr: a line saying a permission was denied, a
file system is read-only or a name is missing, that names a hidden or read-only path of the view (by its
absolute path, its label such as ``~/.ssh``, or its workspace-relative name). A write refused somewhere the view
never offered is named too, and a network failure says the command has no network. A line that names nothing
known gives no note: a plain missing file is the command's own business.
"""

from __future__ import annotations

import re

from toolrig.sandbox.confine import View

_DENIED = re.compile(
    r"permission denied|operation not permitted|read-only file system|errno 13|errno 30|eacces|erofs", re.I
)
_NETWORK = re.compile(
    r"network is unreachable|could not resolve host|temporary failure in name resolution|name or service not known"
    r"|failed to establish a new connection|connection refused|couldn't connect to server|errno 101|enetunreach",
    re.I,
)
_GIT_LOCK = re.compile(r"\.git/[^\s'\"]*\.lock")
_LOOPBACK = re.compile(r"127\.0\.0\.\d+|localhost|\[?::1\]?")
_QUOTED = re.compile(r"""['"`‘]([^'"`’\s]+)['"`’]|(/[^\s:'"]+)""")
_MAX_LINES = 400


def boundary_note(view: View, stderr: str, exit_code: int | None, command: str = "") -> str | None:
    """What in the view the command ran into, in words the model can act on; None when nothing was hit.

    ``command`` (its text) tells a refused connection to loopback from another when the error names no host.
    """
    if exit_code == 0 and not stderr:
        return None
    hidden = {*view.hidden_dirs, *view.hidden_files}
    frozen = {*view.read_only, *view.sealed}
    names: list[str] = []
    read_only_hit: str | None = None
    network = loopback = git = False
    for line in stderr.splitlines()[-_MAX_LINES:]:
        if _NETWORK.search(line):
            network = True
            loopback = loopback or bool(_LOOPBACK.search(line) or _LOOPBACK.search(command))
        if not _DENIED.search(line):
            continue
        git = git or bool(_GIT_LOCK.search(line))
        hit = _named(line, view, hidden | frozen)
        if hit is not None and hit not in names:
            names.append(hit)
        elif hit is None and "read-only file system" in line.lower() and read_only_hit is None:
            read_only_hit = _first_path(line) or "that path"
    notes = []
    for path in names:
        label = view.label(path)
        if path in hidden:
            notes.append(f"'{label}' is not visible to commands (toolrig's sandbox hides it); ask the user if needed")
        else:
            notes.append(f"'{label}' is read-only for commands (toolrig's sandbox); ask the user to change it")
    if read_only_hit is not None and not names:
        notes.append(
            f"{read_only_hit} is read-only for commands: they may write only in the workspace and /tmp "
            "(the session's own temp directory)"
        )
    if git and not names:
        notes.append(
            "git cannot write .git here (under the Landlock fallback a directory holding read-only .git/hooks and "
            ".git/config takes no new entry, so git add/commit fail); ask the user to commit, or to install "
            "bubblewrap"
        )
    if network and view.network == "none":
        notes.append("commands have no network here (the sandbox gives them none); ask the user, or use fetch_url")
    elif loopback and view.network == "guarded":
        notes.append(
            "127.0.0.1 inside a command is the sandbox's own loopback (a server an earlier command started is not "
            "kept): the host's services are not reachable from commands, and the guard refuses loopback unless "
            "the user sets tool_config.run_command.allow_loopback"
        )
    return "; ".join(notes) + "." if notes else None


def _named(line: str, view: View, paths: set[str]) -> str | None:
    for path in sorted(paths, key=len, reverse=True):
        label = view.label(path).rstrip("/")
        base = path.rsplit("/", 1)[-1]
        if path in line or (label and label in line) or _names_base(line, base):
            return path
    return None


def _names_base(line: str, base: str) -> bool:
    return any(base == (a or b).rstrip("/").rsplit("/", 1)[-1] for a, b in _QUOTED.findall(line))


def _first_path(line: str) -> str | None:
    for a, b in _QUOTED.findall(line):
        if (a or b).strip():
            return f"'{a or b}'"
    return None
