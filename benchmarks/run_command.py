"""Cost of ``run_command("true")`` through ``rig.call`` against ``subprocess.run`` of the same command.

The tool runs every command under ``bash -c`` (started by the launcher's per-command keeper, in a pids
cgroup where the kernel offers one, with the prelude's limits and final-directory report), so the peer runs
``bash -c true`` too; ``subprocess.run(["true"])`` is shown for scale. Every command runs confined by default
(issue 31: bubblewrap, a mount and pid namespace per command, joining its session's network namespace, and an
egress proxy per command listening there):
the *confined ratio*, ours / peer, has a target of <= 5x; the same with ``network: none`` (no proxy) and with
``sandbox: off`` (the keeper alone, whose target was 1.3x) are shown beside it.
The machine's load matters a great deal here (each command is three process hand-offs: toolrig -> keeper ->
bash -> keeper -> toolrig, and namespaces made and torn down), so note ``uptime`` with any figure. CPU per
command over the whole process tree (toolrig, the launcher and its keepers, bash) is printed too, in total and by
process: on a busy machine it moves far less than wall time.

    python benchmarks/run_command.py [--rounds N] [--per-round N] [--cpu-calls N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable

import anyio

from _harness import alternate_async, fmt_seconds, print_table, result_line
from toolrig import Rig
from toolrig.sandbox.process import PidsCgroup


async def spaced(contenders: dict[str, Callable[[], Awaitable[object]]], calls: int, gap: float) -> dict[str, float]:
    """Median of single calls, each after ``gap`` idle seconds, contenders interleaved call by call."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(calls):
        for name, fn in contenders.items():
            await anyio.sleep(gap)
            start = time.perf_counter()
            await fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def launcher_cpu() -> float:
    """CPU seconds of this process's launcher and keepers, with the commands they reaped (from /proc)."""
    return sum(launcher_cpu_split().values())


def launcher_cpu_split() -> dict[str, float]:
    """The same, by who spent it: the launcher, its keepers, and the commands the keepers reaped (bash)."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[int, tuple[int, list[int]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            if not any(arg.endswith(b"launcher.py") for arg in argv) or argv[-2:-1] != [str(os.getpid()).encode()]:
                continue
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry)] = (int(fields[1]), [int(value) for value in fields[11:15]])  # utime, stime, cutime, cstime
    split = {"launcher": 0, "keepers": 0, "commands": 0}
    for ppid, (utime, stime, cutime, cstime) in found.values():
        if ppid in found:  # a keeper: its own time, and its reaped commands'
            split["keepers"] += utime + stime
            split["commands"] += cutime + cstime
        else:  # the launcher: its own, and keepers it reaped (each with its reaped commands)
            split["launcher"] += utime + stime
            split["keepers"] += cutime + cstime
    return {name: value / ticks for name, value in split.items()}


async def cpu_per_call(fn: Callable[[], Awaitable[object]], calls: int) -> dict[str, float]:
    """CPU seconds per call of the whole tree, by process: this one, its children, the launcher, its keepers."""
    before = os.times()
    tree = launcher_cpu_split()
    for _ in range(calls):
        await fn()
    after = os.times()
    split = {"this process": sum(after[:2]) - sum(before[:2]), "its children": sum(after[2:4]) - sum(before[2:4])}
    split |= {name: value - tree[name] for name, value in launcher_cpu_split().items()}
    return {name: value / calls for name, value in split.items()}


async def main(rounds: int, per_round: int, gap_ms: float, spaced_calls: int, cpu_calls: int) -> None:
    rig = Rig(tempfile.mkdtemp(), config={})
    rig_no_cgroup = Rig(tempfile.mkdtemp(), config={"tool_config": {"run_command": {"max_processes": None}}})
    rig_unconfined = Rig(tempfile.mkdtemp(), config={"tool_config": {"run_command": {"sandbox": "off"}}})
    rig_offline = Rig(tempfile.mkdtemp(), config={"tool_config": {"run_command": {"network": "none"}}})

    async def toolrig_run_command() -> object:
        result = await rig.call("run_command", {"command": "true"})
        assert result.output["exit_code"] == 0, result
        return result

    async def toolrig_without_cgroup() -> object:
        return await rig_no_cgroup.call("run_command", {"command": "true"})

    async def toolrig_unconfined() -> object:
        return await rig_unconfined.call("run_command", {"command": "true"})

    async def toolrig_offline() -> object:
        return await rig_offline.call("run_command", {"command": "true"})

    async def subprocess_bash() -> object:
        return subprocess.run(["bash", "-c", "true"], capture_output=True, stdin=subprocess.DEVNULL, check=True)

    async def subprocess_true() -> object:
        return subprocess.run(["true"], capture_output=True, stdin=subprocess.DEVNULL, check=True)

    contenders = {
        "subprocess.run(['bash', '-c', 'true'])": subprocess_bash,
        "toolrig run_command('true')": toolrig_run_command,
        "toolrig run_command('true'), network none": toolrig_offline,
        "toolrig run_command('true'), sandbox off": toolrig_unconfined,
        "toolrig run_command('true'), max_processes off": toolrig_without_cgroup,
        "subprocess.run(['true'])": subprocess_true,
    }
    for fn in contenders.values():  # warm up: imports, the prelude file, the cgroup probe
        for _ in range(20):
            await fn()
    series = await alternate_async(contenders, rounds=rounds, per_round=per_round)
    peer = series["subprocess.run(['bash', '-c', 'true'])"].median
    rows = [(name, fmt_seconds(s.median), f"{s.median / peer:.2f}x") for name, s in series.items()]
    print_table("run_command('true') vs subprocess.run (median per call)", rows, ("path", "per call", "vs peer"))
    print(f"pids cgroup in use: {PidsCgroup.base() is not None}")
    sample = await rig.call("run_command", {"command": "true"})
    print(f"containment: {sample.output['containment']}")
    ours = series["toolrig run_command('true')"].median
    print(result_line("run_command", ours, peer, peer_name="subprocess.run_bash_-c_true"))
    print(f"confined ratio: {ours / peer:.2f}x bare bash -c true (target <= 5x); load: {os.getloadavg()}")
    if cpu_calls:
        cpu = {name: await cpu_per_call(fn, cpu_calls) for name, fn in list(contenders.items())[:2]}
        for name, split in cpu.items():  # clock ticks: 10 ms each, so take more calls for a finer split
            parts = ", ".join(f"{part} {seconds * 1e3:.2f}" for part, seconds in split.items() if seconds)
            print(f"CPU per command (ms), {name}: {parts}")
        ours_cpu = sum(cpu["toolrig run_command('true')"].values())
        peer_cpu = sum(cpu["subprocess.run(['bash', '-c', 'true'])"].values())
        print(f"CPU per command, whole process tree: toolrig {ours_cpu * 1e3:.2f} ms, peer {peer_cpu * 1e3:.2f} ms")
        print(result_line("run_command_cpu", ours_cpu, peer_cpu))
    if spaced_calls:
        medians = await spaced(contenders, spaced_calls, gap_ms / 1000)
        peer = medians["subprocess.run(['bash', '-c', 'true'])"]
        rows = [(name, fmt_seconds(m), f"{m / peer:.2f}x") for name, m in medians.items()]
        print_table(f"the same, one call every {gap_ms:g} ms (median)", rows, ("path", "per call", "vs peer"))
        ours = medians["toolrig run_command('true')"]
        print(result_line("run_command_spaced", ours, peer, gap_ms=gap_ms))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=40)
    parser.add_argument("--gap-ms", type=float, default=100.0, help="idle time before each spaced call")
    parser.add_argument("--spaced", type=int, default=15, help="spaced calls per contender (0: none)")
    parser.add_argument("--cpu-calls", type=int, default=200, help="calls for the CPU-per-command line (0: none)")
    options = parser.parse_args()
    anyio.run(main, options.rounds, options.per_round, options.gap_ms, options.spaced, options.cpu_calls)
