"""Rate limits per tool and per agent: token buckets kept in ``.toolrig/ratelimit.db``.

Trust model: the buckets live in SQLite, so every process working in the workspace draws from the same
ones; a limit holds however many agents, MCP servers or command lines run at once.

``rate_limits: {send_email: 10/minute}`` is one bucket per tool the glob names, shared by every agent;
``agents.NAME.rate_limit`` is one bucket for all of that agent's calls; ``agents.NAME.rate_limits`` are
per tool for that agent. A call draws one token from every bucket that applies, or from none. A subagent
draws from its root agent's per-agent buckets (its ``AgentView.owner``): children spend their parent's budget.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolrig.config import Config, parse_rate
from toolrig.errors import ErrorType, ToolError
from toolrig.permissions import AgentView
from toolrig.registry import AnyTool, matches_any

MIGRATIONS = [
    """
    CREATE TABLE buckets (
        key TEXT PRIMARY KEY,
        tokens REAL NOT NULL,
        updated REAL NOT NULL
    )
    """
]


@dataclass(frozen=True, slots=True)
class Limit:
    key: str  # the bucket
    text: str  # as written: "10/minute"
    count: int
    period: float  # seconds
    source: str  # where it was written: "rate_limits.send_email"

    @property
    def per_second(self) -> float:
        return self.count / self.period


@dataclass(frozen=True, slots=True)
class Refusal:
    limit: Limit
    wait: float  # seconds until one token is back


def limit(key: str, text: str, source: str) -> Limit:
    count, period = parse_rate(text)
    return Limit(key, text, count, period, source)


class RateLimiter:
    def __init__(self, config: Config, state_dir: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock  # wall time: buckets are shared with other processes, monotonic clocks are not
        from toolrig.stores.sqlite import Database

        self.db = Database(state_dir / "ratelimit.db", MIGRATIONS, lazy=True, accept_newer=True)
        self._limits: dict[tuple[str, str | None], list[Limit]] = {}

    def limits_for(self, tool: AnyTool, agent: AgentView | str | None) -> list[Limit]:
        """The buckets a call of ``tool`` by ``agent`` draws from: the tool's, and its agent's (or its root's).

        A subagent's view carries its parent's per-agent limits and names its root as owner: children draw
        from their root's buckets rather than multiply them. Worked out once per tool, on the view's own memo
        for a subagent (nothing of a run is kept here).
        """
        view = agent if isinstance(agent, AgentView) and not agent.configured else None
        name = (agent.name if isinstance(agent, AgentView) else agent) if view is None else None
        cache: dict[tuple[str, str | None], list[Limit]]
        cache = self._limits if view is None else view.memo.setdefault("limits", {})
        found = cache.get((tool.name, name))
        if found is not None:
            return found
        limits = [
            limit(f"tool:{tool.name}:{pattern}", text, f"rate_limits.{pattern}")
            for pattern, text in self.config.rate_limits.items()
            if matches_any(tool, (pattern,))
        ]
        profile = self.config.agents.get(name) if name else view.profile if view is not None else None
        owner = name if view is None else view.owner or view.label
        if profile is not None and owner is not None:
            if profile.rate_limit:
                limits.append(limit(f"agent:{owner}", profile.rate_limit, f"agents.{owner}.rate_limit"))
            limits.extend(
                limit(f"agent:{owner}:tool:{tool.name}:{pattern}", text, f"agents.{owner}.rate_limits.{pattern}")
                for pattern, text in profile.rate_limits.items()
                if matches_any(tool, (pattern,))
            )
        cache[(tool.name, name)] = limits
        return limits

    async def acquire(self, tool: AnyTool, agent: AgentView | str | None) -> Refusal | None:
        """Take a token from every bucket that applies, or say which bucket is empty and for how long."""
        limits = self.limits_for(tool, agent)
        if not limits:
            return None
        return await self.db.write_async(lambda conn: self._take(conn, limits))

    def acquire_blocking(self, limits: list[Limit]) -> Refusal | None:
        return self.db.write(lambda conn: self._take(conn, limits))

    def _take(self, conn: Any, limits: list[Limit]) -> Refusal | None:  # a sqlite3.Connection
        now = self.clock()
        levels: list[tuple[Limit, float]] = []
        worst: Refusal | None = None
        for item in limits:
            row = conn.execute("SELECT tokens, updated FROM buckets WHERE key = ?", (item.key,)).fetchone()
            tokens = float(item.count)
            if row is not None:
                tokens = min(tokens, row[0] + max(0.0, now - row[1]) * item.per_second)
            if tokens < 1.0:
                wait = (1.0 - tokens) / item.per_second
                if worst is None or wait > worst.wait:
                    worst = Refusal(item, wait)
            levels.append((item, tokens))
        if worst is not None:
            return worst  # nothing drawn: a refused call costs no token
        conn.executemany(
            "INSERT INTO buckets (key, tokens, updated) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET tokens = excluded.tokens, updated = excluded.updated",
            [(item.key, tokens - 1.0, now) for item, tokens in levels],
        )
        return None


def over_limit(tool: str, refusal: Refusal) -> ToolError:
    item = refusal.limit
    wait = f"{max(refusal.wait, 0.1):.1f}" if refusal.wait < 10 else str(math.ceil(refusal.wait))
    return ToolError(
        ErrorType.RATE_LIMITED,
        f"'{tool}' is over its rate limit of {item.text} ({item.source}).",
        f"Wait {wait} seconds before calling '{tool}' again, or do something else first.",
        retryable=True,
    )


def describe(limits: list[Limit]) -> list[str]:
    return [f"{item.text} ({item.source})" for item in limits]
