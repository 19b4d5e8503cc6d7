from __future__ import annotations

import os
import select
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.process import CappedText, Limits, PidsCgroup, run_contained, scrub_env


def capped(chunks: list[bytes], cap: int) -> CappedText:
    buffer = CappedText(cap)
    for chunk in chunks:
        buffer.feed(chunk)
    buffer.close()
    return buffer


def test_short_output_is_kept_whole() -> None:
    assert capped([b"hello ", b"world\n"], 100).text() == "hello world\n"


def test_long_output_keeps_head_and_tail_and_says_how_much_was_dropped() -> None:
    text = capped([b"A" * 60, b"B" * 100, b"C" * 60], 100).text()
    assert text.startswith("A" * 50)
    assert text.endswith("C" * 50)
    assert "[... 120 characters dropped from the middle ...]" in text


@settings(max_examples=200)
@given(st.lists(st.binary(max_size=300), max_size=40), st.integers(min_value=2, max_value=200))
def test_memory_stays_bounded_and_nothing_is_miscounted(chunks: list[bytes], cap: int) -> None:
    buffer = CappedText(cap)
    for chunk in chunks:
        buffer.feed(chunk)
        held = sum(map(len, buffer._head)) + sum(map(len, buffer._tail)) + len(buffer._carry)
        assert held <= cap + 256  # head + tail + at most one pending escape sequence
    buffer.close()
    whole = CappedText(10**9)
    for chunk in chunks:
        whole.feed(chunk)
    whole.close()
    full = whole.text()
    kept = sum(map(len, buffer._head)) + sum(map(len, buffer._tail))
    assert kept + buffer.dropped == len(full)
    if not buffer.dropped:
        assert buffer.text() == full
    else:
        assert buffer.text().startswith(full[: cap // 2])
        assert buffer.text().endswith(full[-(cap - cap // 2) :])


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x1b"), max_size=200))
def test_ansi_escapes_are_stripped_even_when_split_across_reads(plain: str) -> None:
    colored = f"\x1b[1;31m{plain}\x1b[0m\x1b]0;title\x07done".encode()
    for split in range(0, len(colored), 3):
        assert capped([colored[:split], colored[split:]], 10_000).text() == plain + "done"


def test_utf8_split_across_reads_decodes_cleanly() -> None:
    data = "naïve – 日本".encode()
    assert capped([data[:3], data[3:9], data[9:]], 1000).text() == "naïve – 日本"


def test_environment_keeps_allowed_names_and_drops_secrets_matched_by_globs() -> None:
    environ = {
        "PATH": "/bin",
        "LC_ALL": "C",
        "OPENAI_API_KEY": "sk-x",
        "GITHUB_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "s",
        "LC_SESSION_TOKEN": "glob-matched secret",
        "DB_PASSWORD": "p",
        "RANDOM": "r",
    }
    env = scrub_env(environ, ["PATH", "LC_*", "GITHUB_TOKEN"], {"NO_COLOR": "1"})
    assert env == {"PATH": "/bin", "LC_ALL": "C", "GITHUB_TOKEN": "t", "NO_COLOR": "1"}


_NAMES = st.sampled_from(["LC_TOOLRIG_A", "LC_TOOLRIG_TOKEN", "TOOLRIG_PLAIN", "TOOLRIG_EXACT_SECRET", "PATH_TOOLRIG"])


@settings(max_examples=60)
@given(st.lists(st.tuples(_NAMES, st.one_of(st.none(), st.text(alphabet="abc", max_size=3))), max_size=12))
def test_the_environment_of_the_process_is_judged_again_after_every_change(
    changes: list[tuple[str, str | None]],
) -> None:
    """scrub_env keeps its answer for os.environ: a set, changed or deleted variable must show in the next one."""
    allow = ["PATH", "LC_*", "TOOLRIG_EXACT_SECRET"]
    extra = {"NO_COLOR": "1"}
    names = {name for name, _ in changes}
    saved = {name: os.environ.get(name) for name in names}
    try:
        for name, value in changes:
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
            assert scrub_env(os.environ, allow, extra) == scrub_env(dict(os.environ), allow, extra)
            assert scrub_env(os.environ, ["PATH"]) == scrub_env(dict(os.environ), ["PATH"])
        returned = scrub_env(os.environ, allow, extra)
        returned["PATH"] = "changed by the caller"
        assert scrub_env(os.environ, allow, extra)["PATH"] == os.environ["PATH"]
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.mark.anyio
async def test_a_process_reports_output_exit_code_and_final_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = await run_contained(
        ["bash", "-c", "echo out; echo err >&2; cd sub; exit 3"],
        cwd=tmp_path,
        env=scrub_env(os.environ),
        timeout=10,
        report_cwd=True,
    )
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert result.final_cwd == str(tmp_path / "sub")
    assert not result.timed_out


@pytest.mark.anyio
async def test_a_command_starts_in_the_directory_its_descriptor_holds_not_where_its_path_now_leads(
    tmp_path: Path,
) -> None:
    """The keeper changes into the descriptor it was handed, never walks the path again (a check-then-use race)."""
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    held = os.open(tmp_path / "ws" / "sub", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        (tmp_path / "ws" / "sub").rename(tmp_path / "ws" / "sub.old")
        (tmp_path / "ws" / "sub").symlink_to(tmp_path / "outside")
        result = await run_contained(
            ["bash", "-c", "readlink /proc/$$/cwd; touch here"],
            cwd=tmp_path / "ws" / "sub",
            cwd_fd=held,
            env=scrub_env(os.environ),
            timeout=10,
            report_cwd=True,
        )
        os.fstat(held)  # still the caller's: run_contained does not close it
    finally:
        os.close(held)
    assert result.stdout == f"{tmp_path / 'ws' / 'sub.old'}\n", result
    assert (tmp_path / "ws" / "sub.old" / "here").exists()
    assert not (tmp_path / "outside" / "here").exists()


@pytest.mark.anyio
async def test_a_start_directory_that_is_gone_is_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as raised:
        await run_contained(["bash", "-c", "true"], cwd=tmp_path / "missing", env=scrub_env(os.environ), timeout=10)
    assert raised.value.error_type == ErrorType.NOT_FOUND and "missing" in str(raised.value)


@pytest.mark.anyio
async def test_stdin_is_closed_so_nothing_waits_for_input(tmp_path: Path) -> None:
    result = await run_contained(["bash", "-c", "cat; echo end"], cwd=tmp_path, env=scrub_env(os.environ), timeout=10)
    assert result.stdout == "end\n"


@pytest.mark.anyio
async def test_resource_limits_are_applied_inside_the_child(tmp_path: Path) -> None:
    limits = Limits(cpu_seconds=7, memory_mb=512, file_size_mb=2)
    result = await run_contained(
        ["bash", "-c", "ulimit -t; ulimit -v; ulimit -f"],
        cwd=tmp_path,
        env=scrub_env(os.environ),
        timeout=10,
        limits=limits,
    )
    assert result.stdout.split() == ["7", str(512 * 1024), str(2 * 1024)]


@pytest.mark.anyio
async def test_a_file_larger_than_the_limit_cannot_be_written(tmp_path: Path) -> None:
    result = await run_contained(
        ["bash", "-c", "head -c 3000000 /dev/zero > big; echo status=$?"],
        cwd=tmp_path,
        env=scrub_env(os.environ),
        timeout=10,
        limits=Limits(file_size_mb=1),
    )
    assert (tmp_path / "big").stat().st_size <= 1024 * 1024
    assert "status=0" not in result.stdout


def test_the_machine_offers_a_pids_cgroup_for_fork_limits() -> None:
    # CI runs as root on machines with a writable pids controller; without it fork bombs are contained by
    # RLIMIT_NPROC only for non-root users, so this must hold where the hostile tests run.
    assert PidsCgroup.base() is not None, "no writable pids cgroup: run the tests as root on a cgroup machine"


@pytest.mark.anyio
async def test_cancelling_the_caller_kills_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    with anyio.move_on_after(5) as scope:
        async with anyio.create_task_group() as group:

            async def run() -> None:
                await run_contained(
                    ["bash", "-c", f"sleep 60 & echo $! > {pid_file}; wait"],
                    cwd=tmp_path,
                    env=scrub_env(os.environ),
                    timeout=None,
                    kill_grace=0.2,
                )

            group.start_soon(run)
            while not pid_file.exists() or not pid_file.read_text().strip():
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert not alive(int(pid_file.read_text()))


def alive(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` is still running ``within`` seconds from now; waits on a pidfd, not a sleep.

    A signal is delivered asynchronously, so a killed process may take a moment to die under load.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        return not select.select([fd], [], [], within)[0]
    finally:
        os.close(fd)


WRITE = (
    "import fcntl, sys\n"
    "out, err, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])\n"
    "for stream in (sys.stdout, sys.stderr):\n"
    "    if size: fcntl.fcntl(stream.fileno(), 1031, size)  # F_SETPIPE_SZ: the pipe holds it all at the end\n"
    "sys.stdout.write('o' * out); sys.stdout.flush()\n"
    "sys.stderr.write('e' * err); sys.stderr.flush()\n"
)


@settings(max_examples=12, deadline=None)
@given(
    out=st.integers(min_value=0, max_value=300_000),
    err=st.integers(min_value=0, max_value=300_000),
    pipe_size=st.sampled_from([0, 1 << 20]),
)
def test_everything_a_command_wrote_before_it_ended_is_in_the_result(out: int, err: int, pipe_size: int) -> None:
    """Read as it comes, or found in the pipes when the keeper says the command is over (it closes its copies of
    the pipes after that, so the end is not waited for): either way, not a byte is lost or read twice."""

    async def go() -> tuple[str, str]:
        result = await run_contained(
            ["python3", "-c", WRITE, str(out), str(err), str(pipe_size)],
            cwd=Path("/"),
            env=scrub_env(os.environ),
            timeout=30,
            output_cap=1_000_000,
            prelude=False,
        )
        assert result.exit_code == 0, result.stderr[-500:]
        return result.stdout, result.stderr

    stdout, stderr = anyio.run(go)
    assert (len(stdout), len(stderr)) == (out, err)
    assert set(stdout) <= {"o"} and set(stderr) <= {"e"}


def test_commands_run_in_a_process_holding_more_descriptors_than_select_takes(workspace: Path) -> None:
    """A server, or a long test run, holds over 1,024 descriptors: the launcher's and keepers' pidfds are then
    above ``FD_SETSIZE``, which ``select`` refuses, and every command failed as ``internal`` (looked for by poll)."""
    import resource

    from toolrig import Rig
    from toolrig.sandbox.process import Launcher

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard >= 1200 or hard == resource.RLIM_INFINITY, "this test needs room for 1,100 more descriptors"
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        Launcher.forget(Launcher.get())  # the next command starts a launcher whose pidfd comes after them all
        rig = Rig(workspace, config={})
        for _ in range(3):
            result = rig.call_sync("run_command", {"command": "echo ok"})
            assert not result.is_error and result.output["stdout"] == "ok\n", result
        launcher = Launcher.get()
        assert launcher.pidfd is not None and launcher.pidfd > 1024  # the case this test is about
        assert not launcher.gone()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_extra_descriptors_reach_the_command_as_5_and_on_and_the_callers_stay_open(workspace: Path) -> None:
    """A sandbox wrapper's descriptors (a session's namespaces) ride along with the request, large ones too."""
    ends = [os.pipe() for _ in range(2)]
    for number, (_, write) in enumerate(ends):
        os.write(write, f"fd{number}".encode())
        os.close(write)
    reads = [read for read, _ in ends]
    env = {"PATH": os.environ["PATH"], "BIG": "x" * 70_000}  # over the inline limit: the request goes in a memfd
    try:
        result = anyio.run(
            lambda: run_contained(
                ["bash", "-c", "cat <&5; cat <&6; pwd"], cwd=workspace, env=env, timeout=10, extra_fds=reads
            )
        )
        assert result.stdout == f"fd0fd1{workspace}\n", result
        for fd in reads:
            os.fstat(fd)  # still the caller's
    finally:
        for fd in reads:
            os.close(fd)
