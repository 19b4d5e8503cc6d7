"""The launcher's keepers stay for the next command (issue 19): nothing of one command may reach the next.

A keeper keeps command after command in the same pids cgroup, so everything a command could leave in it (its
processes, its process limit, the shared prelude, the request socket the keeper reads) is checked here from
the next command's side.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.forked import in_child
from toolrig import Rig
from toolrig.result import ToolResult
from toolrig.sandbox.launcher import Board


def shell(workspace: Path, **settings: Any) -> Rig:
    # The launcher and keepers on their own: these commands reach their keeper's cgroup and pids, which the
    # sandbox hides (a read-only /sys, a pid namespace); tests/sandbox/test_confined_routes.py covers the sandbox.
    settings.setdefault("sandbox", "off")
    return Rig(workspace, config={"tool_config": {"run_command": settings}})


def run(rig: Rig, command: str, **args: Any) -> ToolResult:
    return rig.call_sync("run_command", {"command": command, **args})


PIDS_CGROUP = "$(sed -n 's/^[0-9]*:pids:\\(.*\\)$/\\1/p' /proc/self/cgroup)"


def test_a_command_cannot_rewrite_the_prelude_the_next_command_runs(workspace: Path) -> None:
    rig = shell(workspace, cpu_seconds=5)
    payload = "builtin ulimit -t 99; builtin exit 0\n#"
    first = run(rig, f"printf '{payload}' > /proc/self/fd/4; printf '{payload}' | dd of=/dev/fd/4 2>/dev/null; true")
    assert not first.is_error, first
    second = run(rig, "echo ran; ulimit -t")
    assert second.output["stdout"] == "ran\n5\n", second.output


def test_a_command_holds_no_descriptor_but_its_own_streams(workspace: Path) -> None:
    result = run(shell(workspace), "ls -l /proc/$$/fd/")  # bash's own, listed by its only child
    rows = [line.split() for line in result.output["stdout"].splitlines()]
    held = {row[-3]: row[-1] for row in rows if len(row) > 9 and row[-2] == "->"}
    assert not any(target.startswith("socket:") for target in held.values()), held  # no request socket
    assert set(held) <= {"0", "1", "2", "3", "4"}, held  # stdin, out, err, final directory, prelude


def test_a_process_limit_and_a_cgroup_setting_of_one_command_do_not_carry_over(workspace: Path) -> None:
    tight, roomy = shell(workspace, max_processes=8), shell(workspace, max_processes=64)
    keepers = set()
    for _ in range(4):  # each keeper in turn: a tight command, then a roomy one, maybe in the same cgroup
        first = run(tight, f"echo $PPID; echo 2 > /sys/fs/cgroup/pids{PIDS_CGROUP}/pids.max 2>/dev/null; true")
        keepers.add(first.output["stdout"].split()[0])
        second = run(roomy, "for i in $(seq 20); do sleep 5 & done; jobs -p | wc -l; kill $(jobs -p)")
        assert second.output["stdout"].split()[-1] == "20", second.output
    assert len(keepers) <= 2 + 1, keepers  # kept by the staying keepers, not one new process per command


def test_a_cgroup_limit_a_command_wrote_is_put_back_for_the_next_command_with_the_same_limit(workspace: Path) -> None:
    """The keeper writes pids.max only when the limit changes, so it must undo what a command wrote itself."""
    rig = shell(workspace, max_processes=64)
    # after the lowering, only builtins: a fork would fail
    lower = f"d=/sys/fs/cgroup/pids{PIDS_CGROUP}; echo $PPID; echo 2 > $d/pids.max; read -r v < $d/pids.max; echo $v"
    fork = "echo $PPID; for i in $(seq 20); do sleep 5 & done; jobs -p | wc -l; kill $(jobs -p)"
    after_lowered = 0
    for _ in range(4):  # keepers take requests in turn: one of the two forks follows the lowering in its keeper
        lowered = run(rig, lower).output["stdout"].split()
        assert lowered[-1] == "2", lowered  # the command could lower it
        for _ in range(2):
            forked = run(rig, fork).output["stdout"].split()
            assert forked[-1] == "20", forked
            after_lowered += forked[0] == lowered[0]
    assert after_lowered, "no command ran in a keeper right after the one that lowered its limit"


@pytest.mark.slow
def test_more_commands_at_once_than_idle_keepers_all_run_and_end(workspace: Path) -> None:
    rig = shell(workspace)
    outputs: list[str] = []

    async def one(index: int) -> None:
        result = await rig.call("run_command", {"command": f"sleep 0.3; echo {index}"})
        outputs.append(result.output["stdout"])

    async def many() -> None:
        async with anyio.create_task_group() as group:
            for index in range(6):
                group.start_soon(one, index)

    anyio.run(many)
    assert sorted(outputs) == [f"{index}\n" for index in range(6)]
    assert run(rig, "echo after").output["stdout"] == "after\n"


@pytest.mark.slow
@pytest.mark.parametrize("request_to_stop", ["timeout", "flood"])
def test_a_stop_asked_for_one_command_never_reaches_the_next(workspace: Path, request_to_stop: str) -> None:
    rig = shell(workspace, max_output_bytes=100_000, kill_grace_seconds=0.2)
    for _ in range(3):
        if request_to_stop == "timeout":
            stopped = run(rig, "trap '' TERM; sleep 30", timeout_seconds=0.5)
            assert stopped.output["timed_out"] is True
        else:
            stopped = run(rig, "yes flood")
            assert stopped.output["stopped"].startswith("output limit")
        after = run(rig, "sleep 0.3; echo survived")
        assert after.output["stdout"] == "survived\n", after.output
        assert after.output["exit_code"] == 0


def kill_the_launcher_during(rig: Rig, long: str) -> dict[str, str]:
    """Run ``long``; while its keeper holds it, a command kills the launcher, then one more command runs.

    The stdout of each ("long", "killer", "next"), or the error that came back instead.
    """
    outputs: dict[str, str] = {}

    async def call(name: str, command: str) -> None:
        result = await rig.call("run_command", {"command": command})
        outputs[name] = result.output["stdout"] if result.output else f"error: {result.message}"

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(call, "long", long)  # its keeper still holds the socket
            await anyio.sleep(0.3)
            await call("killer", "kill -9 $(awk '{print $4}' /proc/$PPID/stat); echo killed")
            await call("next", "echo still here")

    anyio.run(scenario)
    return outputs


@pytest.mark.slow
def test_a_launcher_killed_while_another_command_runs_loses_no_later_command(workspace: Path) -> None:
    outputs = kill_the_launcher_during(shell(workspace), "sleep 1.5; echo long done")
    assert outputs == {"long": "long done\n", "killer": "killed\n", "next": "still here\n"}, outputs


@pytest.mark.slow
def test_a_keeper_whose_launcher_died_removes_its_cgroup_before_it_reports_the_end(workspace: Path) -> None:
    """Nobody else removes it: the new launcher's clean-up ran while this keeper still held its command."""
    outputs = kill_the_launcher_during(shell(workspace), f"echo {PIDS_CGROUP}; sleep 1.5; echo long done")
    cgroup, said = outputs["long"].split("\n", 1)
    assert said == "long done\n", outputs
    assert cgroup.startswith("/") and "toolrig-spare-" in cgroup, cgroup
    assert not Path(f"/sys/fs/cgroup/pids{cgroup}").exists()


LAUNCHER = "$(awk '{print $4}' /proc/$PPID/stat)"  # the keeper's parent


def wake_ups(pid: int) -> int:
    """How many times the process went to sleep and was woken (its voluntary context switches)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def test_back_to_back_commands_do_not_wake_the_launcher(workspace: Path) -> None:
    """Idle keepers are counted on the board: only a keeper that takes the last idle turn (or dies) wakes it."""
    rig = shell(workspace)
    launcher = int(run(rig, f"echo {LAUNCHER}").output["stdout"])
    before = wake_ups(launcher)
    for _ in range(20):
        assert run(rig, "true").output["exit_code"] == 0
    assert wake_ups(launcher) - before <= 2  # was 40: "taken" and "idle again" for every command
    assert int(run(rig, f"echo {LAUNCHER}").output["stdout"]) == launcher


@pytest.mark.slow
def test_an_idle_keeper_killed_by_a_command_is_replaced_and_counted_as_idle(workspace: Path) -> None:
    """The launcher reads on the board whether a dead keeper was idle: killing idle keepers over and over is a
    death it replaces, and the commands around it run (no request waits for a keeper that is gone)."""
    rig = shell(workspace)
    siblings = f"for k in $(cat /proc/{LAUNCHER}/task/*/children); do [ $k != $PPID ] && kill -9 $k; done; echo done"
    for _ in range(5):
        assert run(rig, siblings).output["stdout"] == "done\n"
        assert run(rig, "echo next").output["stdout"] == "next\n"
    outputs: list[str] = []

    async def one(index: int) -> None:
        result = await rig.call("run_command", {"command": f"sleep 0.2; echo {index}"})
        assert result.output is not None, result.to_json()  # CI saw one error result here once: say which
        outputs.append(result.output["stdout"])

    async def many() -> None:
        async with anyio.create_task_group() as group:
            for index in range(4):
                group.start_soon(one, index)

    anyio.run(many)
    assert sorted(outputs) == [f"{index}\n" for index in range(4)]


def test_a_command_holding_the_boards_lock_does_not_stall_the_next_commands(workspace: Path) -> None:
    """The lock's descriptor is reachable through /proc/PPID/fd (same user): a keeper only tries it, never waits."""
    rig = shell(workspace)
    holder = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
        "open('held', 'w').close()\n"
        "while not os.path.exists('release'):\n"
        "    time.sleep(0.01)\n"
    )
    (workspace / "holder.py").write_text(holder)
    hold = (
        "for fd in /proc/$PPID/fd/*; do case $(readlink $fd) in *toolrig-board*) python3 holder.py $fd & ;; esac; done;"
        " wait; echo released"
    )

    async def scenario() -> dict[str, str]:
        outputs: dict[str, str] = {}

        async def call(name: str, command: str) -> None:
            outputs[name] = (await rig.call("run_command", {"command": command})).output["stdout"]

        async with anyio.create_task_group() as group:
            group.start_soon(call, "hold", hold)
            with anyio.fail_after(30):
                while not (workspace / "held").exists():
                    await anyio.sleep(0.01)
            for index in range(3):
                await call(f"next{index}", f"echo {index}")
            (workspace / "release").touch()
        return outputs

    outputs = anyio.run(scenario)
    assert outputs == {"hold": "released\n", "next0": "0\n", "next1": "1\n", "next2": "2\n"}, outputs


def test_the_board_says_whether_another_keeper_is_idle_and_whether_a_dead_one_was() -> None:
    """The launcher's death accounting reads the board: a keeper that took a request did not die idle."""
    board = Board()
    first, second = board.claim(), board.claim()
    assert first is not None and second is not None and first != second
    taken = board.taken()
    assert board.take(first) is True  # the second is still idle: no need to wake the launcher
    assert board.take(second) is False  # none left: the launcher must fork one
    assert board.taken() == taken + 2
    board.mark(first, b"\x01")  # back from its command
    assert board.release(first) is True  # died idle
    assert board.release(second) is False  # died keeping a command
    assert board.claim() in (first, second)  # slots are reused


def test_a_keeper_that_cannot_take_the_boards_lock_at_once_reports_none_idle() -> None:
    """Never a wait: whoever holds the lock (a command can reach it), the keeper wakes the launcher instead."""
    board = Board()
    mine, other = board.claim(), board.claim()
    assert mine is not None and other is not None
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the holder: POSIX locks belong to a process
        fcntl.lockf(board.lock, fcntl.LOCK_EX)
        os.write(ready_w, b"held")
        signal.pause()
    os.close(ready_w)
    try:
        assert os.read(ready_r, 4) == b"held"  # an empty read: the holder died first
        taken = board.taken()
        assert board.take(mine) is False  # the other slot is idle, but the lock could not be had
        assert board.taken() == taken and not board.idle(mine)  # marked busy all the same
    finally:
        os.close(ready_r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert board.take(other) is False and board.taken() == taken + 1  # free again: counted


@pytest.mark.slow
def test_a_stopped_launcher_whose_keepers_are_gone_fails_the_next_command_and_is_replaced(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing reads a request then: it waited for its start forever, and so did every later command (keeprev F1).

    A command may stop the launcher (same user) and kill every keeper; a stopped launcher is not a dead one, so
    toolrig kept sending to it. Now a request not taken within its timeout and a bounded wait more fails as
    ``unavailable``, the launcher is killed, and the next command runs under a new one.
    """
    from toolrig.sandbox import process

    monkeypatch.setattr(process, "_START_SECONDS", 1.0, raising=False)
    rig = shell(workspace)
    launcher = int(run(rig, f"echo {LAUNCHER}").output["stdout"])
    handle = os.pidfd_open(launcher)
    try:
        # Each step waits for its effect (kill only queues a signal): the launcher stopped, so it forks no keeper
        # after the listing; every other keeper a zombie, so none takes the next request while it is dying.
        stop_all = (
            f"L={LAUNCHER}; kill -STOP $L; until grep -q ') T ' /proc/$L/stat; do :; done;"
            " others=$(for k in $(cat /proc/$L/task/*/children); do [ $k != $PPID ] && echo $k; done);"
            " for k in $others; do kill -9 $k; done;"
            " for k in $others; do until grep -qs ') Z ' /proc/$k/stat || [ ! -e /proc/$k ]; do :; done; done;"
            " kill -9 $PPID"
        )
        run(rig, stop_all)

        async def scenario() -> tuple[ToolResult, ToolResult]:
            with anyio.fail_after(60):  # it used to wait for ever
                unstarted = await rig.call("run_command", {"command": "echo never", "timeout_seconds": 1})
                return unstarted, await rig.call("run_command", {"command": "echo recovered"})

        unstarted, after = anyio.run(scenario)
        assert unstarted.is_error and unstarted.error_type == "unavailable", unstarted
        assert "did not start" in unstarted.message, unstarted.message
        assert after.output["stdout"] == "recovered\n", after

        async def launcher_ends() -> None:
            with anyio.fail_after(10):
                await anyio.wait_readable(handle)  # the stopped launcher was killed, not left behind

        anyio.run(launcher_ends)
    finally:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(handle, signal.SIGKILL)
        os.close(handle)


def test_no_ancestor_of_a_command_holds_toolrigs_standard_streams(workspace: Path) -> None:
    """The keeper and the launcher inherited toolrig's stderr: a command wrote escape sequences straight to the
    user's terminal through ``/proc/$PPID/fd/2`` (past the output's ANSI stripping) and could read keys typed
    there (keeprev F4). Their standard streams are /dev/null."""
    rig = shell(workspace)
    said = run(rig, f"L={LAUNCHER}; for p in $PPID $L; do for fd in 0 1 2; do readlink /proc/$p/fd/$fd; done; done")
    assert said.output["stdout"].split("\n") == ["/dev/null"] * 6 + [""], said.output


def test_a_keeper_never_starts_a_request_whose_caller_has_hung_up(workspace: Path) -> None:
    """toolrig gives up on a request nothing took in time (keeprev F1) and closes its end of the status socket; a
    keeper that takes the request later must not run it (toolrig already said it did not run)."""
    import socket

    from toolrig.sandbox.process import Launcher

    out_r, out_w = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    start = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    ours.shutdown(socket.SHUT_WR)  # hung up (half: what the keeper answers is still read here)
    request = {"argv": ["touch", "ran"], "env": {}, "prelude": False, "pids_max": None, "count_limit": None}
    try:
        Launcher.send(request, [out_w, out_w, theirs.fileno(), start])
        theirs.close()
        os.close(out_w)
        ours.settimeout(30)
        said = b""
        while chunk := ours.recv(4096):
            said += chunk
    finally:
        ours.close()
        os.close(start)
        os.close(out_r)
    assert said.startswith(b"E "), said
    assert not (workspace / "ran").exists()


# What a process of the same user may set on another one, and its children inherit (keeprev F6).
CORRUPTIONS = {
    "rlimits": "prlimit --pid {target} --fsize=0:0 --nofile=64:64 --stack=1048576:1048576",
    "nice": "renice -n 19 -p {target} >/dev/null",
    "affinity": "taskset -p 1 {target} >/dev/null",
    "oom score": "echo 900 > /proc/{target}/oom_score_adj",
    "scheduler": "chrt --idle -p 0 {target}",
    "io priority": "ionice -c 3 -p {target}",
}
PROBE = (
    "ulimit -a; nice; taskset -p $$ | sed 's/.*: //'; cat /proc/self/oom_score_adj; chrt -p $$ | sed 's/.*: //';"
    " ionice -p $$;"
    " grep -c ':pids:/.*toolrig-spare-' /proc/self/cgroup"
)


@pytest.mark.slow
@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("target", ["keeper", "launcher"])
def test_what_a_command_sets_on_its_keeper_or_launcher_never_reaches_a_later_command(
    workspace: Path, corruption: str, target: str
) -> None:
    """A keeper stays for the next command, and keepers are forked from the launcher: a command that set their
    limits, priority, CPUs, OOM score, scheduling or I/O priority (same user: prlimit, renice, taskset, chrt,
    ionice) had every later command of that keeper, or of every keeper forked after, inherit them (``fsize=0``:
    all ended by SIGXFSZ)."""
    rig = shell(workspace)
    before = run(rig, PROBE).output
    assert before["exit_code"] == 0, before
    command = CORRUPTIONS[corruption].format(target="$PPID" if target == "keeper" else LAUNCHER)
    if target == "launcher":  # and have the launcher fork new keepers, which inherit what it has
        command += f"; for k in $(cat /proc/{LAUNCHER}/task/*/children); do [ $k != $PPID ] && kill -9 $k; done"
    assert run(rig, command + "; echo set").output["stdout"] == "set\n"
    for _ in range(4):
        after = run(rig, PROBE).output
        assert (after["stdout"], after["exit_code"]) == (before["stdout"], 0), after


@pytest.mark.slow
def test_a_keeper_a_command_moved_out_of_its_cgroup_keeps_no_later_command(workspace: Path) -> None:
    """Root may move its keeper to the parent cgroup: every later command of that keeper ran with no process
    limit, where a command lifting its own cgroup's limit lifts it only for itself (keeprev F6)."""
    rig = shell(workspace)
    moved = run(rig, f"echo $PPID > $(dirname /sys/fs/cgroup/pids{PIDS_CGROUP})/cgroup.procs; echo moved")
    assert moved.output["stdout"] == "moved\n", moved.output
    for _ in range(4):
        after = run(rig, "grep -c ':pids:/.*toolrig-spare-' /proc/self/cgroup").output
        assert after["stdout"] == "1\n", after


@pytest.mark.slow
def test_a_command_that_makes_the_next_keepers_cgroup_names_first_leaves_them_their_cgroups(workspace: Path) -> None:
    """The names were a counter: a command that made the next two hundred and killed its keeper left every later
    keeper with no pids cgroup (the mkdir failed, the keeper went on without one), so no process limit after it."""
    rig = shell(workspace)
    here = run(rig, f"echo /sys/fs/cgroup/pids{PIDS_CGROUP}").output["stdout"].strip()
    parent, name = here.rsplit("/", 1)
    stem = re.match(r"toolrig-spare-\d+-\d+", name).group(0)  # type: ignore[union-attr] # -<owner>-<launcher>
    squat = f"for n in $(seq 1 200); do mkdir {parent}/{stem}-$n {parent}/{stem}-$n-0 2>/dev/null; done; echo made"
    try:
        assert run(rig, squat).output["stdout"] == "made\n"
        for _ in range(3):  # its keeper killed three times: new keepers, new names
            run(rig, "kill -9 $PPID")
            after = run(rig, "grep -c ':pids:/.*toolrig-spare-' /proc/self/cgroup").output
            assert after["stdout"] == "1\n", after
            assert after["containment"].startswith("pids cgroup"), after
    finally:
        for n in range(1, 201):
            for made in (f"{parent}/{stem}-{n}", f"{parent}/{stem}-{n}-0"):
                with contextlib.suppress(OSError):
                    os.rmdir(made)


def without_privileges(work: Callable[[], str]) -> str:
    """``work()`` in a forked child whose every descendant lacks CAP_SYS_RESOURCE and CAP_SYS_NICE (still root, so
    the interpreter under /root runs): a lowered hard limit or a raised nice value cannot be taken back there."""

    def drop() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (24, 23):  # CAP_SYS_RESOURCE, CAP_SYS_NICE
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")

    return in_child(drop, work)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["keeper", "launcher"])
def test_a_keeper_or_launcher_changed_for_good_is_replaced_before_a_later_command(workspace: Path, target: str) -> None:
    """Where what a command set cannot be taken back (a hard limit lowered, without CAP_SYS_RESOURCE), the keeper
    ends instead of staying, and a launcher ends so that toolrig starts a new one (keeprev F6)."""

    def work() -> str:
        rig = shell(workspace)
        probe = "ulimit -Hn; nice"
        before = run(rig, probe).output["stdout"]
        where = "$PPID" if target == "keeper" else LAUNCHER
        command = f"prlimit --pid {where} --nofile=64:64; renice -n 19 -p {where} >/dev/null"
        if target == "launcher":
            command += f"; for k in $(cat /proc/{LAUNCHER}/task/*/children); do [ $k != $PPID ] && kill -9 $k; done"
        said = [run(rig, command + "; echo set").output["stdout"]]
        said += [run(rig, probe).output.get("stdout") for _ in range(4)]
        return json.dumps({"before": before, "said": said})

    said = json.loads(without_privileges(work))
    assert said["said"] == ["set\n"] + [said["before"]] * 4, said


def test_a_command_that_killed_its_keeper_says_so_in_its_result(workspace: Path) -> None:
    """Its processes are killed with the keeper (cgroup or launcher): output after that is never seen, and the
    result had no exit code and no word of why (keeprev F5)."""
    called = run(shell(workspace), "echo before; kill -9 $PPID; sleep 5; echo after")
    result = called.output
    assert result is not None, (called.error_type, called.message)
    assert result["stdout"] == "before\n", result
    assert result["exit_code"] is None and "keeper" in (result["stopped"] or ""), result


def test_forgetting_a_dead_launcher_leaves_the_cgroups_a_new_one_made(workspace: Path) -> None:
    """A new launcher (another thread's next command) makes empty cgroups its keepers are about to join.

    Forgetting the dead one removed every empty ``toolrig-spare-<us>-*``: a keeper whose cgroup went that way
    ran its commands with no pids cgroup. Only the dead launcher's own are removed now.
    """
    from toolrig.sandbox.process import Launcher, PidsCgroup

    rig = shell(workspace)
    assert run(rig, "true").output["exit_code"] == 0
    base = PidsCgroup.base()
    assert base is not None
    dead = Launcher.get()
    assert dead.pid is not None
    newer, older = (
        base / f"toolrig-spare-{os.getpid()}-{dead.pid + 1}-99998",
        base / f"toolrig-spare-{os.getpid()}-{dead.pid}-99999",
    )
    newer.mkdir()  # as a new launcher has, just before its keeper joins it
    older.mkdir()  # as the dead one's idle spare left it
    try:
        PidsCgroup.forget_spares(dead.pid)
        assert newer.is_dir() and not older.exists()
    finally:
        for path in (newer, older):
            with contextlib.suppress(OSError):
                path.rmdir()


def test_a_keeper_coming_back_from_its_command_counts_as_ready_for_the_next_request() -> None:
    """toolrig sends its next request as soon as it hears a command ended, while that keeper still cleans up:
    the keeper taking the request must not find nobody idle and wake the launcher (CI saw three wake-ups in
    twenty back-to-back commands from this)."""
    board = Board()
    first, second = board.claim(), board.claim()
    assert first is not None and second is not None
    assert board.take(first) is True
    board.mark(first, b"\x02")  # told toolrig X, not yet back at the socket
    assert board.ready_soon(first) and not board.idle(first)
    assert board.take(second) is True  # the first is as good as idle: no keeper to fork
    assert board.release(first) is False  # a keeper that dies on its way back took a request: not an idle death


def test_a_launcher_that_is_ending_is_waited_for_before_a_request_is_called_failed() -> None:
    """A stopping launcher closes its socket before it exits: a request seen lost a moment early must still find it
    gone (and be asked again), so ``gone`` can wait for the end it is told is coming."""
    import subprocess
    import sys

    from toolrig.sandbox.launcher_client import _ended

    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    pidfd = os.pidfd_open(child.pid)
    try:
        assert not _ended(pidfd)  # alive: no wait
        assert child.stdin is not None
        child.stdin.close()  # it ends now, some time after this
        assert _ended(pidfd, within=60.0)  # waited for, not missed
        assert child.wait() == 0
    finally:
        os.close(pidfd)
        if child.poll() is None:
            child.kill()
            child.wait()
