"""What the commands of one session share: one network namespace, started on first use, ended with the session.

Why: a guarded command in a network namespace of its own needed a bridge (a Python start, ~30 ms) to reach the
egress proxy; commands that join their session's namespace need none (the holder hands each command's proxy
listening sockets in it), and what one command serves there (a dev server, a database) later commands of the
same session reach on 127.0.0.1, as on a developer's machine. Nothing else is shared: each command keeps its
own mount, pid, IPC and UTS namespaces, its own view and its own proxy, deciding with *its* caller's policy.

Ownership: a ``SessionSandbox`` belongs to whoever owns the session (an agent run, an MCP session, the Rig for
the calls that bring none) and travels with each call (``CallScope.sandbox`` -> ``ToolContext.sandbox``); it
is never looked up by an id. ``close()`` ends the holder (the namespace ends with its last member); a closed
one starts a new namespace on its next use, as the Rig's stores reopen. It is independent of event loops and
threads (``call_sync`` runs each call in a loop of its own): the holder is a process of its own, driven by
blocking round trips under a lock, and a garbage-collected ``SessionSandbox`` closes its holder.

Interface (for run_command, and for background commands, issue 39)::

    net = session.network()      # SessionNetwork (``toolrig.sandbox.netns``), started on first use (blocking,
                                 # ~14 ms: call it from a worker thread when ``session.started()`` is False);
                                 # OSError when this machine cannot hold one (the caller falls back to a
                                 # namespace per command, and says so)
    command_net.joined(net, egress, fd_numbers=(6, 7))   # one command's way in: nsenter prefix, proxy env
    session.network("offline")   # network: none: a namespace of the session's with nothing leading out
    session.close()              # idempotent; from any thread

A command that must outlive its call (a background server) keeps its own ``Egress`` open for as long as it runs:
the proxy listeners a command gets are its own and close with its proxy, the namespace stays with the session.
"""

from __future__ import annotations

import shutil
import sys
import threading
import weakref
from typing import Literal

from toolrig.sandbox.netns import SessionNetwork

Kind = Literal["guarded", "offline"]


class SessionSandbox:
    """One session's shared sandbox resources (today: its network namespace); see the module's docstring."""

    def __init__(self, *, python: str = sys.executable, prefix: tuple[str, ...] = ()) -> None:
        self._python = python
        self._prefix = prefix  # before bubblewrap on the holder's command line (tests: an unprivileged user)
        self._lock = threading.Lock()
        self._nets: dict[Kind, SessionNetwork] = {}  # live namespaces; the finalizer reaches the dict without self
        self._failure: str | None = None
        self._finalizer = weakref.finalize(self, _close_all, self._nets)

    def started(self, kind: Kind = "guarded") -> bool:
        """Whether that namespace is live (``network(kind)`` returns at once, without starting a holder)."""
        net = self._nets.get(kind)
        return net is not None and net.alive()

    @property
    def failure(self) -> str | None:
        """Why this machine cannot hold a session namespace (remembered: it is not tried again), or None."""
        return self._failure

    def network(self, kind: Kind = "guarded", *, bwrap: str = "bwrap") -> SessionNetwork:
        """The session's namespace of that kind, started (again, after ``close`` or a dead holder) when needed.

        ``guarded``: its commands' proxies listen in it, and servers they start are there. ``offline`` (for
        ``network: none``): a second one, where nothing listens that leads out, so "none" means none even in a
        session whose other commands are guarded (a server of theirs could relay).
        """
        with self._lock:
            if self._failure is not None:
                raise OSError(self._failure)
            held = self._nets.get(kind)
            if held is not None and held.alive():
                return held
            if held is not None:
                del self._nets[kind]
                held.close()
            if shutil.which("nsenter") is None:
                self._failure = "nsenter (util-linux) is not installed: commands cannot join a session's namespace"
                raise OSError(self._failure)
            try:
                net = SessionNetwork.start(bwrap=bwrap, python=self._python, prefix=self._prefix)
            except OSError as exc:
                self._failure = str(exc)
                raise
            self._nets[kind] = net
            return net

    def close(self) -> None:
        """End the session's namespaces (and every server left in them with their last member); idempotent."""
        with self._lock:
            _close_all(self._nets)

    def __enter__(self) -> SessionSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_all(nets: dict[Kind, SessionNetwork]) -> None:
    while nets:
        nets.popitem()[1].close()
