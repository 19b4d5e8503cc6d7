"""The tree's one budget: any shape of runs, any interleaving of their turns, one limit (agent/budget.py)."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.agent.budget import Ledger
from toolrig.agent.errors import RunError

EPS = 1e-9


@dataclass
class Plan:
    limit: float
    cost: float
    parents: list[int]  # run i's parent is parents[i] (< i); run 0 is the root
    own_limits: list[float | None]
    pauses: list[list[int]]  # per run, per turn: checkpoints spent inside the model call
    cancel_at: list[int | None]  # per run: the turn during which the run is cancelled, if any


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    runs = draw(st.integers(1, 7))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, runs)]
    own = [None] + [draw(st.one_of(st.none(), st.floats(0.01, 3.0))) for _ in range(1, runs)]
    pauses = [draw(st.lists(st.integers(0, 4), min_size=1, max_size=12)) for _ in range(runs)]
    cancel_at = [draw(st.one_of(st.none(), st.integers(0, 12))) for _ in range(runs)]
    return Plan(draw(st.floats(0.05, 3.0)), draw(st.floats(0.01, 0.7)), parents, own, pauses, cancel_at)


async def play(plan: Plan) -> list[Ledger]:
    """Every run loops model turns at once (as parallel and background children do) until the budget stops it."""
    ledgers: list[Ledger] = []
    for i, parent in enumerate(plan.parents):
        ledgers.append(Ledger(plan.limit) if parent < 0 else ledgers[parent].child(plan.own_limits[i]))

    async def run(i: int) -> None:
        ledger = ledgers[i]
        with anyio.CancelScope() as scope:
            for turn in range(60):
                pauses = plan.pauses[i][turn % len(plan.pauses[i])]
                try:
                    async with ledger.turn() as charge:
                        for _ in range(pauses):
                            await anyio.lowlevel.checkpoint()
                        if plan.cancel_at[i] == turn:
                            scope.cancel()  # cut short inside the model call: nothing charged, nothing leaked
                            await anyio.lowlevel.checkpoint()
                        charge(plan.cost)
                    ledger.raise_if_over()
                except RunError as exc:
                    assert exc.kind == "budget"
                    return

    with anyio.fail_after(60):  # a guard against a deadlock, not a timing assertion
        async with anyio.create_task_group() as group:
            for i in range(len(plan.parents)):
                group.start_soon(run, i)
    return ledgers


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_no_tree_of_concurrent_runs_spends_more_than_its_limit_plus_the_turn_that_crosses_it(plan: Plan) -> None:
    ledgers = anyio.run(play, plan)
    root = ledgers[0]
    assert root.spent <= plan.limit + plan.cost + EPS
    for ledger, own in zip(ledgers, plan.own_limits, strict=True):
        if own is not None:
            assert ledger.spent <= own + plan.cost + EPS
        assert ledger.in_flight == 0
    # What every ledger holds is its own turns plus its descendants', never more.
    for i, ledger in enumerate(ledgers):
        below = [j for j in range(len(ledgers)) if i in ancestors(plan.parents, j)]
        assert ledger.spent >= sum(ledgers[j].spent for j in below if plan.parents[j] == i) - EPS


def ancestors(parents: list[int], j: int) -> set[int]:
    out: set[int] = set()
    while parents[j] >= 0:
        j = parents[j]
        out.add(j)
    return out


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 3.0), st.floats(0.01, 0.7), st.integers(2, 12))
def test_n_children_started_together_share_the_remainder_instead_of_each_getting_it(
    limit: float, cost: float, children: int
) -> None:
    """The reported case: N children spawned in one call each used to get the whole remainder."""
    plan = Plan(limit, cost, [-1] + [0] * children, [None] * (children + 1), [[1]] * (children + 1), [None] * 11)
    plan.cancel_at = [None] * (children + 1)
    ledgers = anyio.run(play, plan)
    assert ledgers[0].spent <= limit + cost + EPS
    assert sum(ledger.spent for ledger in ledgers[1:]) <= ledgers[0].spent + EPS


@pytest.mark.anyio
async def test_a_run_over_its_ancestors_limit_is_refused_its_next_turn_with_a_budget_error() -> None:
    root = Ledger(1.0)
    child = root.child(None)
    async with child.turn() as charge:
        charge(1.5)
    with pytest.raises(RunError) as caught:
        await child.admit()
    assert caught.value.kind == "budget" and "root run and its subagents" in caught.value.message
    assert "$1.5000" in caught.value.message and root.in_flight == 0
