"""Channels: other ways people reach the gateway's runs (a chat app), started and stopped with the server.

Why here: a channel must share the web page's sessions, runs, cards and audit, not run a second loop. It gets the
same ``RunManager`` the HTTP API uses, and through it starts or continues a session's run (``start``), finds the
run going on a session (``for_session``), follows its events (``LiveRun.follow``), answers its cards
(``LiveRun.answer``) and cancels it (``cancel``). A run a channel starts is one of the server's runs: the page
and the API see it too (as the ``user`` it names, see ``RunManager.start``).

Life: ``serve(runs)`` is started in the server's task group once the server is ready and is cancelled when the
server stops; it should run until cancelled. A channel that raises is logged and stopped; the server and its
other channels go on (a chat app being down must not take the page with it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import anyio

if TYPE_CHECKING:
    from toolrig.gateway.runs import RunManager

log = logging.getLogger("toolrig.gateway")


class Channel(Protocol):
    """What ``toolrig serve`` needs of a channel."""

    name: str

    async def serve(self, runs: RunManager) -> None:
        """Run until cancelled: take messages, start/continue runs through ``runs``, relay their events."""
        ...


async def run_channel(channel: Channel, runs: RunManager, scope: anyio.CancelScope) -> None:
    """One channel in the server's task group: its failure is logged and ends only it."""
    with scope:
        try:
            await channel.serve(runs)
        except Exception:
            log.exception("gateway: channel %s failed and is stopped (the server goes on)", channel.name)
