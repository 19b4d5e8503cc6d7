"""A command against its containment: reading secrets one level up (D4), and escaping or outgrowing it on a
machine with and without a pids cgroup (D12). ``TOOLRIG_NO_CGROUP=1`` simulates a machine without one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolrig import Rig
from toolrig.result import ToolResult
from toolrig.sandbox.process import PidsCgroup

SECRET = "sk-ant-FAKE-parent-secret-7d1c"


def shell(workspace: Path, **settings: Any) -> Rig:
    # The keeper's containment, on its own: these commands look for their processes by host pid, which a sandbox's
    # pid namespace hides (tests/sandbox/test_confined_routes.py holds the same under the sandbox).
    settings.setdefault("sandbox", "off")
    return Rig(workspace, config={"tool_config": {"run_command": settings}})


def run(rig: Rig, command: str, **args: Any) -> ToolResult:
    return rig.call_sync("run_command", {"command": command, **args})


@pytest.fixture(params=["cgroup", "no cgroup"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test runs with the pids cgroup and without one (the probe is re-run for each mode)."""
    if request.param == "no cgroup":
        monkeypatch.setenv("TOOLRIG_NO_CGROUP", "1")
    else:
        monkeypatch.delenv("TOOLRIG_NO_CGROUP", raising=False)
    monkeypatch.setattr(PidsCgroup, "_base", None)  # both are restored after the test
    monkeypatch.setattr(PidsCgroup, "_probed", False)
    yield request.param


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaps counts as dead: pid 1 here never reaps)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_r04_no_ancestor_of_a_command_holds_toolrigs_secrets(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("FAKE_SECRET_TOKEN", SECRET)
    rig = shell(workspace)
    walk = (
        'p=$$; while [ "$p" -gt 1 ]; do echo "pid $p"; tr "\\0" "\\n" < /proc/$p/environ; '
        "p=$(awk '{print $4}' /proc/$p/stat); done"
    )
    result = run(rig, walk)
    out = result.output["stdout"]
    assert not result.is_error and out.count("pid ") >= 3, result  # bash, its keeper, the launcher
    assert SECRET not in out
    assert f"pid {os.getpid()}\n" not in out  # toolrig is not an ancestor at all


# Sleep durations unique to this test process: a run elsewhere on the machine has sleepers of its own.
_TAG = f"{os.getpid() % 100_000:05d}"
S30, S187, S188, S189, S190 = (f"{n}.{_TAG}" for n in (30, 187, 188, 189, 190))


def test_the_result_says_which_containment_held_the_command(workspace: Path, mode: str) -> None:
    result = run(shell(workspace), "true")
    containment = result.output["containment"]
    assert ("pids cgroup" in containment) is (mode == "cgroup"), containment
    assert "subreaper" in containment


def test_a_fork_burst_over_max_processes_is_bounded(workspace: Path, mode: str) -> None:
    rig = shell(workspace, max_processes=8)
    command = f"for i in $(seq 40); do sleep {S30} & done; echo started=$(jobs -p | wc -l); wait"
    result = run(rig, command, timeout_seconds=20)
    out = result.output
    if mode == "cgroup":
        started = int(out["stdout"].split("started=")[1].split()[0]) if "started=" in out["stdout"] else 0
        assert started <= 8, out
    else:
        assert out["stopped"] and "process limit" in out["stopped"], out
    assert not out["timed_out"] or mode == "cgroup"
    assert not _sleepers(S30), "a sleeper outlived its command"


@pytest.mark.parametrize(
    "command",
    [
        f"setsid sleep {S187} & sleep 60",
        f"(setsid sleep {S187} &); sleep 60",
        f"setsid -f sleep {S187}; sleep 60",
        f"setsid bash -c 'sleep {S187} & sleep {S187}' & sleep 60",
    ],
    ids=["setsid", "subshell", "setsid-f", "setsid-bash"],  # the same in every xdist worker (the tag is not)
)
def test_setsid_children_do_not_outlive_the_timeout(workspace: Path, mode: str, command: str) -> None:
    result = run(shell(workspace), command, timeout_seconds=1)
    assert result.output["timed_out"] is True
    assert not _sleepers(S187), "a setsid child outlived the timeout"


def test_setsid_children_do_not_outlive_a_command_that_ends(workspace: Path, mode: str) -> None:
    result = run(shell(workspace), f"setsid -f sleep {S188}; echo done")
    assert result.output["stdout"] == "done\n"
    assert not _sleepers(S188)


def test_a_command_that_kills_its_keeper_still_loses_its_children(workspace: Path, mode: str) -> None:
    result = run(shell(workspace), f"setsid -f sleep {S189}; kill -9 $PPID; sleep 60", timeout_seconds=2)
    assert not result.is_error or result.error_type != "internal"
    assert not _sleepers(S189)


def _sleepers(seconds: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline[:2] == [b"sleep", seconds.encode()] and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_commands_leave_no_prelude_directories_behind(workspace: Path) -> None:
    before = set(Path("/tmp").glob("toolrig-*/prelude.bash"))
    result = run(shell(workspace, cpu_seconds=5), "ulimit -t; pwd")
    assert result.output["stdout"].split() == ["5", str(workspace)]
    assert set(Path("/tmp").glob("toolrig-*/prelude.bash")) <= before


def test_a_command_that_kills_the_launcher_does_not_break_the_next_one(workspace: Path) -> None:
    rig = shell(workspace)
    run(rig, "kill -9 $(awk '{print $4}' /proc/$PPID/stat)")
    result = run(rig, "echo still here")
    assert result.output["stdout"] == "still here\n", result


def test_a_command_that_stops_its_keeper_still_loses_its_children(workspace: Path, mode: str) -> None:
    command = f"setsid -f bash -c 'sleep {S190} & sleep {S190}'; kill -STOP $PPID; sleep 60"
    result = run(shell(workspace, kill_grace_seconds=0.2), command, timeout_seconds=1)
    assert result.output["timed_out"] is True
    for _ in range(500):  # the launcher adopts and kills what the stopped keeper kept: wait for it, not a time
        if not _sleepers(S190):
            break
        time.sleep(0.01)
    assert not _sleepers(S190)


S191 = f"191.{_TAG}"


def test_generations_of_orphans_left_by_a_killed_keeper_all_die(workspace: Path, mode: str) -> None:
    """Each generation comes back to the launcher only when the one above it dies, so every kill is followed by
    a death the launcher must notice at once, while it is still busy with the last: a wake-up it misses leaves
    the rest of the chain alive for good."""
    chain = f'sleep {S191} & if [ "$1" -gt 0 ]; then bash ./chain.sh $(($1 - 1)) & else touch ready; fi; wait\n'
    (workspace / "chain.sh").write_text(chain)
    rig = shell(workspace)
    for _ in range(4):
        command = "rm -f ready; setsid -f bash ./chain.sh 12; until [ -e ready ]; do :; done; kill -9 $PPID"
        result = run(rig, command, timeout_seconds=20)
        assert not result.output.get("timed_out"), result
        for _ in range(500):  # the launcher kills each generation as it comes back: wait for that, not a time
            if not _sleepers(S191):
                break
            time.sleep(0.01)
        assert not _sleepers(S191), "a generation of orphans outlived its killed keeper"
