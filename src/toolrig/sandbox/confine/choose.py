"""Which backend confines commands on this machine, tried in a fixed order, and why the others do not.

Order: bubblewrap with a user namespace; bubblewrap as root without one (root in a container that forbids user
namespaces); Landlock; none. Each is tried once per process (a probe run of ``/bin/true``) and remembered per
``PATH``, so a test that hides ``bwrap`` from the PATH sees the fallback. ``sandbox: required`` turns "none" into
an error naming every reason; ``sandbox: off`` (someone already inside their own container) skips the probes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from toolrig.sandbox.confine import Backend, Mode, SandboxUnavailable, View, bwrap, landlocked


class Unconfined:
    """No mechanism: the keeper's containment only (process tree, limits)."""

    name = "none"

    def __init__(self, why: str) -> None:
        self.why = why

    def holds(self) -> str:
        return f"no filesystem or network confinement ({self.why})"

    def wrap(self, view: View, argv: list[str]) -> list[str]:
        return argv


@dataclass(frozen=True, slots=True)
class Choice:
    backend: Backend
    tried: tuple[str, ...]  # why each backend before it did not hold


def choose(
    mode: Mode = "auto", *, force: str | None = None, search_path: str | None = None, network: str | None = None
) -> Choice:
    """The first backend that holds here (``force``: only that one, for tests and ``toolrig sandbox check``).

    ``required`` means every part the config asks for holds: with ``network`` (``none`` or ``guarded``) a backend
    that cannot confine the network (Landlock) does not satisfy it.
    """
    if mode == "off":
        return Choice(Unconfined("sandbox: off in tool_config.run_command"), ())
    path = os.environ.get("PATH", os.defpath) if search_path is None else search_path
    tried: list[str] = []
    for name in ("bwrap", "landlock") if force is None else (force,):
        backend, why = _try(name, path)
        if backend is not None and mode == "required" and network is not None and backend.name != "bwrap":
            tried.append(f"{name}: cannot hold network: {network} (only bwrap confines the network)")
            continue
        if backend is not None:
            return Choice(backend, tuple(tried))
        tried.append(f"{name}: {why}")
    if mode == "required":
        raise SandboxUnavailable("no sandbox mechanism holds on this machine: " + "; ".join(tried))
    return Choice(Unconfined("; ".join(tried) or "none chosen"), tuple(tried))


def _try(name: str, search_path: str) -> tuple[Backend | None, str]:
    if name == "bwrap":
        found = bwrap.find(search_path)
        if found is None:
            return None, "bwrap is not installed (not on PATH; apt-get install bubblewrap)"
        why = bwrap.probe(found, True)
        if why is None:
            return bwrap.Bubblewrap(found, userns=True), ""
        if os.geteuid() == 0 and bwrap.probe(found, False) is None:
            return bwrap.Bubblewrap(found, userns=False), ""
        return None, f"user namespaces are not available ({why})"
    if name == "landlock":
        why = landlocked.unavailable()
        return (landlocked.Landlocked(), "") if why is None else (None, why)
    if name == "none":
        return Unconfined("forced"), ""
    return None, f"unknown backend {name!r}"
