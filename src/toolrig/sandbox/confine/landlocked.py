"""The Landlock backend, for a kernel with Landlock but no namespaces for us (a locked-down container, no bwrap).

Landlock grants access to whole hierarchies and cannot carve an exception out of a grant, so the view is turned
into grants on the largest directories that hold nothing hidden: a directory with a hidden path below it is not
granted itself, its other entries are (``_grants``). What that costs: no new entry can be made *in* such a
directory (under Landlock ``touch new`` at a workspace root fails, since ``.toolrig`` is below it), and a hidden
file matched by a deny glob is hidden as of the command's start. What it does not hold at all: no pid namespace
(toolrig's processes are visible), no network confinement, ``/tmp`` is not private (``TMPDIR`` points at the
session's temp directory instead). The rules are applied by a small shim (``_shim.py``, standard library only)
that then execs the command; ``no_new_privs`` is set first, as Landlock requires.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from toolrig.sandbox import landlock
from toolrig.sandbox.confine import View
from toolrig.sandbox.confine.tmpdir import is_session_base

SHIM = str(Path(__file__).with_name("_shim.py"))
# Rules one command may get. A hidden path in a crowded directory (a TOOLRIG_HOME beside every test's temp dir)
# costs a rule per sibling; past the bound the deepest grants go first, never the system's (shallow) ones.
_MAX_GRANTS = 65536


def unavailable() -> str | None:
    if landlock.abi() < 1:
        return "Landlock is not available (kernel older than 5.13, disabled, or blocked by seccomp)"
    return None


class Landlocked:
    name = "landlock"

    def holds(self) -> str:
        return (
            "landlock: writes only in the workspace and the session's temp dir, toolrig's state and secrets "
            "unreadable; no pid namespace, network not confined"
        )

    def wrap(self, view: View, argv: list[str]) -> list[str]:
        # Other sessions' temp dirs too (the host /tmp is not replaced here): this one is granted by ``writes``.
        sessions = os.path.dirname(view.tmp)
        hidden = (
            *view.hidden_dirs,
            *view.hidden_files,
            *view.sealed,
            *((sessions,) if is_session_base(sessions) else ()),
        )
        reads = _grants("/", hidden)
        writes = [g for top in (*view.writable, view.tmp) for g in _grants(top, (*hidden, *view.read_only))]
        writes += [d for d in ("/dev/null", "/dev/zero", "/dev/full") if os.path.exists(d)]
        reads = sorted(reads, key=lambda path: path.count("/"))[:_MAX_GRANTS]  # stable: shallow ones kept
        spec = json.dumps({"read": reads, "write": writes[:_MAX_GRANTS], "abi": landlock.abi()})
        # In a file of the session's private temp directory, not an argument: a hidden path in a large directory
        # (toolrig's home beside thousands of others) means a grant per sibling, past what one argument may hold.
        fd, path = tempfile.mkstemp(prefix=".toolrig-landlock-", suffix=".json", dir=view.tmp)
        with os.fdopen(fd, "w") as handle:
            handle.write(spec)
        return [sys.executable, "-I", "-S", SHIM, path, "--", *argv]


def _grants(top: str, excluded: tuple[str, ...]) -> list[str]:
    """The largest directories and files below ``top`` (itself included) that hold nothing in ``excluded``."""
    inside = [e for e in excluded if e == top or e.startswith(top.rstrip("/") + "/")]
    if not inside:
        return [top]
    if top in excluded:
        return []
    try:
        names = sorted(os.listdir(top))
    except OSError:
        return []
    out: list[str] = []
    for name in names:
        child = os.path.join(top, name)
        if os.path.islink(child):
            out.append(child)  # a rule on a link grants its target: harmless only when that target is granted too
            continue
        out.extend(_grants(child, tuple(inside)))
    kept = [p for p in out if not os.path.islink(p)]
    if len(kept) > _MAX_GRANTS:  # a crowded directory: its deepest grants go, not the siblings after it
        kept = sorted(kept, key=lambda path: path.count("/"))[:_MAX_GRANTS]
    return kept
