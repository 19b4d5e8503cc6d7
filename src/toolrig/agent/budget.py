"""One spending limit for a tree of runs: a root run and every subagent under it draw from it live.

Why a ledger and not a snapshot: children run at once (parallel spawns, background spawns, grandchildren),
so a limit handed to each child as "what the parent has left" when it starts is given N times over. Here
every model turn of every run in the tree is charged, as it completes, to its own run's ledger and to each
ancestor's, and a turn may start only when every ledger on its chain admits it:

- a ledger that has spent more than its limit admits nothing more (the run asking gets ``RunError("budget")``);
- a turn alone in flight under a ledger may start while that ledger is not over (a single run's rule: the
  turn that crosses the limit is the last, and it may overshoot by itself);
- a turn that would run beside others starts only if all of them, each costed at the largest turn the tree
  has paid for so far, fit in what is left; otherwise (or while no turn's price is known yet) it waits until
  one of them settles and asks again.

So the tree overshoots its limit by at most the turn that crosses it, plus whatever the turns admitted beside
it cost beyond the largest turn seen before them. A run with no limit of its own still charges its ancestors.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import anyio

from toolrig.agent.errors import RunError


@dataclass(eq=False)
class Ledger:
    """What one run and its descendants have spent, against the run's own limit (None: no limit of its own)."""

    limit: float | None
    parent: Ledger | None = None
    spent: float = 0.0  # this run's turns and its descendants', as they complete
    in_flight: int = 0  # turns started and not yet settled, in this run and its descendants
    largest: float | None = None  # the dearest turn paid for anywhere in the tree (on the root); None: none yet
    _settled: anyio.Event = field(default_factory=anyio.Event)  # kept on the root: set when any turn settles

    def chain(self) -> Iterator[Ledger]:
        ledger: Ledger | None = self
        while ledger is not None:
            yield ledger
            ledger = ledger.parent

    @property
    def root(self) -> Ledger:
        *_, last = self.chain()
        return last

    def child(self, limit: float | None) -> Ledger:
        return Ledger(limit, parent=self)

    def over(self) -> Ledger | None:
        """The first ledger on the chain that has spent more than its limit."""
        for ledger in self.chain():
            if ledger.limit is not None and ledger.spent > ledger.limit:
                return ledger
        return None

    def _must_wait(self) -> bool:
        estimate = self.root.largest
        for ledger in self.chain():
            if ledger.limit is None or ledger.in_flight == 0:
                continue
            if estimate is None:  # no turn's price is known yet: one at a time until one is
                return True
            if ledger.spent + (ledger.in_flight + 1) * estimate > ledger.limit:
                return True
        return False

    async def admit(self) -> None:
        """Wait until a turn may start; ``RunError("budget")`` once the tree has nothing left for it."""
        while True:
            self.raise_if_over()
            if not self._must_wait():
                break
            await self.root._settled.wait()
        for ledger in self.chain():
            ledger.in_flight += 1

    def settle(self, cost: float | None) -> None:
        """A turn admitted by ``admit`` ended: charge what it cost (None: it failed before costing anything)."""
        root = self.root
        for ledger in self.chain():
            ledger.in_flight -= 1
            if cost:
                ledger.spent += cost
        if cost is not None:
            root.largest = max(root.largest or 0.0, cost)
        event, root._settled = root._settled, anyio.Event()
        event.set()

    def charge(self, cost: float) -> None:
        """Spending outside a model turn (sampling for a tool or an MCP server), on this run and its ancestors."""
        for ledger in self.chain():
            ledger.spent += cost

    def exhausted(self) -> bool:
        """Whether a ledger on the chain has nothing left (spent at least its limit)."""
        return any(ledger.limit is not None and ledger.spent >= ledger.limit for ledger in self.chain())

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[Callable[[float], None]]:
        """``async with ledger.turn() as charge: ...; charge(cost)``: admitted, then settled even on failure."""
        await self.admit()
        cost: list[float] = []
        try:
            yield cost.append
        finally:
            self.settle(sum(cost) if cost else None)

    def raise_if_over(self) -> None:
        ledger = self.over()
        if ledger is None:
            return
        if ledger is self:
            whose = "the run spent"
        else:
            whose = "the root run and its subagents spent" if ledger.parent is None else "an ancestor run spent"
        raise RunError("budget", f"{whose} ${ledger.spent:.4f}, over its budget of ${ledger.limit:.4f}")
