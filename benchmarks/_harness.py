"""Shared timing for the benchmark scripts: contenders measured alternately in one run, medians reported.

Each script prints a table and one final line ``RESULT <name> ratio=<ours/peer> ours=<...> peer=<...>``.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Series:
    name: str
    samples: list[float] = field(default_factory=list)  # seconds per operation, one per round

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p99(self) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def machine() -> str:
    return f"{platform.machine()} {platform.processor() or ''} Python {sys.version.split()[0]}".replace("  ", " ")


def fmt_seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.2f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.3f} s"


def alternate_sync(contenders: dict[str, Callable[[], object]], *, rounds: int, per_round: int) -> dict[str, Series]:
    """Time each contender ``per_round`` times per round, interleaving contenders round by round."""
    series = {name: Series(name) for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(per_round):
                fn()
            series[name].samples.append((time.perf_counter() - start) / per_round)
    return series


async def alternate_async(
    contenders: dict[str, Callable[[], Awaitable[object]]], *, rounds: int, per_round: int
) -> dict[str, Series]:
    series = {name: Series(name) for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(per_round):
                await fn()
            series[name].samples.append((time.perf_counter() - start) / per_round)
    return series


def print_table(title: str, rows: Sequence[tuple[str, ...]], header: Sequence[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}  ({machine()})")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def result_line(name: str, ours: float, peer: float, unit: str = "s", **extra: object) -> str:
    more = "".join(f" {k}={v}" for k, v in extra.items())
    return f"RESULT {name} ratio={ours / peer:.3f} ours={ours:.6g}{unit} peer={peer:.6g}{unit}{more}"
