"""A confined command's network: nothing (``network: none``), or only the egress proxy (``network: guarded``).

Guarded, each command gets its own proxy (``sandbox.egress.open_egress``), deciding with the *call's* policy
(``tool_config.run_command.allowed_domains`` and the rest, narrowed per agent like any tool setting) and the
guard fetch_url uses; the command's network namespace has only loopback, and ``egress_bridge.py exec`` in front of
the command hands the proxy listening sockets made inside it and sets the proxy variables before it execs the
command (no process stays). The proxy's refusals become the result's note.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from toolrig.sandbox import egress_bridge
from toolrig.sandbox.egress import Egress, open_egress
from toolrig.sandbox.network import NetworkPolicy, Resolver

BRIDGE = str(Path(egress_bridge.__file__).resolve())


@contextlib.asynccontextmanager
async def egress_for(
    policy: NetworkPolicy, resolver: Resolver | None, *, credential: str | None = None, unix: bool = True
) -> AsyncIterator[Egress]:
    """The command's proxy; an error of the command's own (``invalid_input``...) leaves it as itself.

    The proxy serves in a task group, which wraps whatever leaves its block in an exception group: a refusal
    raised while the command started would otherwise reach the caller as an unexpected (``internal``) error.
    """
    try:
        opened = open_egress(
            policy, resolver=resolver, settings="tool_config.run_command", credential=credential, unix=unix
        )
        async with opened as egress:
            yield egress
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


def bridged(egress: Egress, argv: list[str], *, fd: int | None = None) -> list[str]:
    """``argv`` behind the bridge: it runs inside the namespace, then becomes the command.

    ``fd``: the number a connection to the proxy toolrig made has in the command (where a seccomp filter refuses
    the bridge a unix socket of its own); else the bridge connects to the proxy's socket itself.
    """
    via = egress.socket_path if fd is None else f"fd:{fd}"
    return [sys.executable, "-I", "-S", BRIDGE, "exec", via, "--", *argv]


def bridge_paths() -> tuple[str, ...]:
    """What the bridge needs to run inside the view: toolrig's interpreter and the bridge's directory."""
    paths = (sys.prefix, sys.base_prefix, str(Path(BRIDGE).parent))
    return tuple(dict.fromkeys(str(Path(p).resolve()) for p in paths))


def refusal_notes(egress: Egress) -> str | None:
    notes = [refusal.note() for refusal in egress.refusals]
    return " ".join(notes) if notes else None
