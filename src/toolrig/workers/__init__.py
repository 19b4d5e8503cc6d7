"""Durable tasks run as agent runs: the half of durable work that sits above the agent runtime.

Layout: ``runner`` (one attempt of a task as an agent run), ``journal`` (each model turn and tool call a
recorded step), ``host`` (what one worker process keeps across its tasks), ``worker`` (the process loop),
``engine`` (the narrow interface to the workflow engine) with ``dbos_engine`` (DBOS Transact, the only module
that imports ``dbos``). The records, rules and what tools reach (``ToolContext.durable``) are
``toolrig.durable``, below the tools; it runs a job now (``cron run``) through the ``run_inline`` handed to it
from here. Importing this package imports nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolrig.durable.access import DurableAccess


async def run_inline(access: DurableAccess, task_id: str) -> dict[str, Any]:
    """Run a task now in this process (``cron run``): the ``TaskRunner`` a Rig or a command hands its access.

    The runner (and the agent runtime under it) loads on the first run, not with every command's Rig.
    """
    from toolrig.workers.runner import run_inline as run

    return await run(access, task_id)
