"""Executor overhead of governance: ``rig.call`` with policy, audit and rate limits on against all off.

Contenders, measured alternately in one run on the same trivial async tool:

- off: no rules, approvals off, audit off (the executor's own cost)
- policy: rules that name the tool (a predicate deny, an allowlist entry, approvals "always")
- audit: every call appended to ``.toolrig/audit.db`` (WAL, synchronous=NORMAL)
- policy + audit: both
- policy + audit + rate limit: both, plus a token bucket in ``.toolrig/ratelimit.db``

Target: the audit adds at most 50 µs per call. ``ratio`` in the RESULT line is (policy + audit) / off.

    python benchmarks/governance.py [--rounds N] [--per-round N]
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

import anyio

from _harness import alternate_async, fmt_seconds, print_table, result_line
from toolrig import Rig, tool
from toolrig.registry import Registry


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


RULES: dict[str, Any] = {
    "tools": {"rules": [{"tool": "add", "args": {"a": {"gt": 1_000_000}}, "verdict": "deny"}]},
    "approvals": {"mode": "always", "allow": ["add"]},
}
CONFIGS: dict[str, dict[str, Any]] = {
    "off": {"audit": {"enabled": False}},
    "policy": {**RULES, "audit": {"enabled": False}},
    "audit": {},
    "policy + audit": RULES,
    "policy + audit + rate limit": {**RULES, "rate_limits": {"add": "1000000000/second"}},
}


async def main(rounds: int, per_round: int) -> None:
    rigs = {
        name: Rig(tempfile.mkdtemp(), config=config, registry=Registry([tool(name="add")(add)]))
        for name, config in CONFIGS.items()
    }
    args = {"a": 2, "b": 3}

    def contender(rig: Rig) -> Any:
        async def run() -> object:
            result = await rig.call("add", args)
            if result.is_error:
                raise RuntimeError(result.to_json())
            return result

        return run

    contenders = {name: contender(rig) for name, rig in rigs.items()}
    for fn in contenders.values():  # warm up: imports, plans, SQLite files and pages
        for _ in range(500):
            await fn()
    series = await alternate_async(contenders, rounds=rounds, per_round=per_round)
    off = series["off"].median
    best_off = min(series["off"].samples)
    rows = [
        (
            name,
            fmt_seconds(s.median),
            fmt_seconds(s.median - off),
            fmt_seconds(min(s.samples)),
            fmt_seconds(min(s.samples) - best_off),
        )
        for name, s in series.items()
    ]
    header = ("governance", "per call", "added", "best round", "added (best rounds)")
    print_table("rig.call on a trivial async tool (median over rounds; best round)", rows, header)
    audit_cost = series["audit"].median - off
    audit_best = min(series["audit"].samples) - best_off
    policy_cost = series["policy"].median - off
    both = series["policy + audit"].median
    print(
        f"\naudit adds {fmt_seconds(audit_cost)} per call (best rounds: {fmt_seconds(audit_best)}; target <= 50 µs);"
        f" policy adds {fmt_seconds(policy_cost)}"
    )
    audited = rigs["policy + audit"].governance.audit
    if audited is not None:
        print(f"rows written by the 'policy + audit' rig: {audited.count():,}")
    print(
        result_line(
            "governance",
            both,
            off,
            audit_us=f"{audit_cost * 1e6:.1f}",
            audit_best_us=f"{audit_best * 1e6:.1f}",
            policy_us=f"{policy_cost * 1e6:.1f}",
            ratelimit_us=f"{(series['policy + audit + rate limit'].median - both) * 1e6:.1f}",
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=2000)
    options = parser.parse_args()
    anyio.run(main, options.rounds, options.per_round)
