"""send_command_input: a background command reads a pipe as its stdin; a foreground one still reads /dev/null.

Real commands through the launcher's keeper, unconfined and under bubblewrap (``sandbox: required`` on a machine
with it): the pipe's read end travels in the launcher's request and through bwrap as the command's fd 0.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.background_session import Session as BaseSession
from tests.support.procs import alive as _alive
from tests.support.procs import token as _token
from toolrig.errors import ToolError
from toolrig.rig import Rig
from toolrig.sandbox.background import BackgroundJobs, _feed
from toolrig.sandbox.process import ProcessResult
from toolrig.scope import CallScope
from toolrig.tools.background import MAX_INPUT_CHARS

pytestmark = pytest.mark.anyio

SANDBOXES = ["off", "required"]


class Session(BaseSession):
    """The shared session, and a command started and finished in one step each."""

    async def start(self, command: str) -> str:
        return str((await self.ok("run_command", command=command, background=True))["background_id"])

    async def finish(self, job: str) -> dict[str, Any]:
        """Everything it wrote, once it ended."""
        with anyio.fail_after(60):
            await self.jobs.get(job).done.wait()
        read = await self.ok("command_output", id=job)
        assert not read["more"]
        return read


def _config(sandbox: str, **more: Any) -> dict[str, Any]:
    return {"tool_config": {"run_command": {"sandbox": sandbox}}, **more}


@pytest.fixture(params=SANDBOXES)
async def session(request: pytest.FixtureRequest, workspace: Path) -> AsyncIterator[Session]:
    with Rig(workspace, config=_config(request.param)) as rig:
        async with BackgroundJobs.open() as jobs:
            yield Session(rig, jobs)


async def test_cat_echoes_input_sent_in_two_parts_then_ends_at_eof(session: Session) -> None:
    job = await session.start("cat; echo end")
    first = await session.ok("send_command_input", id=job, text="hello ")
    assert (first["sent_chars"], first["unsent_chars"], first["closed"]) == (6, 0, False)
    last = await session.ok("send_command_input", id=job, text="wörld\n", close=True)
    assert (last["sent_bytes"], last["sent_chars"], last["closed"]) == (7, 6, True)
    read = await session.finish(job)
    assert read["stdout"] == "hello wörld\nend\n" and read["exit_code"] == 0


async def test_read_takes_lines_one_at_a_time(session: Session) -> None:
    job = await session.start('read a; echo "got $a"; read b; echo "got $b"; read c || echo "eof after $a $b"')
    await session.ok("send_command_input", id=job, text="one\n")
    with anyio.fail_after(60):
        first = await session.ok("command_output", id=job, wait_seconds=60)
    assert first["stdout"] == "got one\n" and first["status"] == "running"  # it waits for the next line
    await session.ok("send_command_input", id=job, text="two\n", close=True)
    assert (await session.finish(job))["stdout"] == "got two\neof after one two\n"


async def test_the_command_sees_a_pipe_and_a_foreground_one_dev_null(session: Session) -> None:
    job = await session.start("readlink /proc/self/fd/0")
    assert (await session.finish(job))["stdout"].startswith("pipe:[")
    foreground = await session.ok("run_command", command="readlink /proc/self/fd/0; cat; echo rc=$?")
    assert foreground["stdout"] == "/dev/null\nrc=0\n"


async def test_under_bubblewrap_the_input_reaches_the_command_inside_it(workspace: Path) -> None:
    with Rig(workspace, config=_config("required")) as rig:
        async with BackgroundJobs.open() as jobs:
            session = Session(rig, jobs)
            job = await session.start('read line; echo "$line"; cat /proc/1/comm')  # pid 1 of its pid namespace
            await session.ok("send_command_input", id=job, text="inside\n")
            out = (await session.finish(job))["stdout"].splitlines()
    assert out == ["inside", "bwrap"]


async def test_a_command_that_never_reads_gets_a_full_pipe_reported_not_a_hang(session: Session) -> None:
    token = _token()
    job = await session.start(f"sleep {token}")
    results: list[dict[str, Any]] = []
    with anyio.fail_after(60):  # a guard only: every send returns at once, whatever the pipe holds
        while len(results) < 64:
            result = await session.call("send_command_input", id=job, text="€" * (MAX_INPUT_CHARS // 2))
            results.append(result)
            if result["is_error"]:
                break
    *taken, refused = results
    assert refused["error_type"] == "conflict" and "input pipe is full" in refused["message"]
    assert taken, "the first send found the pipe full"
    outputs = [r["output"] for r in taken]
    assert all(o["sent_bytes"] == 3 * o["sent_chars"] for o in outputs)  # whole characters only
    assert all(o["sent_chars"] + o["unsent_chars"] == MAX_INPUT_CHARS // 2 for o in outputs)
    stopped = await session.ok("stop_command", id=job)
    assert stopped["status"] == "stopped" and _alive(token) == []


async def test_more_text_than_one_call_takes_is_refused_before_anything_is_sent(session: Session) -> None:
    job = await session.start("cat")
    refused = await session.call("send_command_input", id=job, text="x" * (MAX_INPUT_CHARS + 1))
    assert refused["is_error"] and refused["error_type"] == "invalid_input"
    await session.ok("send_command_input", id=job, text="", close=True)
    assert (await session.finish(job))["stdout"] == ""


async def test_finished_closed_and_unknown_commands_are_error_results(session: Session) -> None:
    done = await session.start("echo bye")
    await session.finish(done)
    finished = await session.call("send_command_input", id=done, text="late\n")
    assert finished["error_type"] == "conflict" and "it has exited" in finished["message"]
    job = await session.start("cat")
    await session.ok("send_command_input", id=job, text="a", close=True)
    closed = await session.call("send_command_input", id=job, text="b")
    assert closed["error_type"] == "conflict" and "input was closed" in closed["message"]
    unknown = await session.call("send_command_input", id="bg99", text="x")
    assert unknown["error_type"] == "not_found" and "bg99" in unknown["message"]
    assert (await session.finish(job))["stdout"] == "a"


async def test_another_owner_s_command_is_unknown_and_gets_nothing(workspace: Path) -> None:
    with Rig(workspace, config=_config("off")) as rig:
        async with BackgroundJobs.open() as mine, BackgroundJobs.open() as theirs:
            owner, other = Session(rig, mine), Session(rig, theirs)
            job = await owner.start("cat")
            foreign = await other.call("send_command_input", id=job, text="injected\n", close=True)
            assert foreign["error_type"] == "not_found" and "its commands: none" in foreign["message"]
            none = await rig.call("send_command_input", {"id": job, "text": "x"}, scope=CallScope())
            assert none.is_error and none.error_type is not None and none.error_type.value == "not_found"
            await owner.ok("send_command_input", id=job, text="mine\n", close=True)
            assert (await owner.finish(job))["stdout"] == "mine\n"


async def test_policy_rules_see_the_text_and_the_group_hides_the_tool(workspace: Path) -> None:
    rules = {"tools": {"rules": [{"tool": "send_command_input", "subject": "*rm *", "verdict": "deny"}]}}
    with Rig(workspace, config=_config("off", **rules)) as rig:
        async with BackgroundJobs.open() as jobs:
            session = Session(rig, jobs)
            job = await session.start("cat")
            denied = await session.call("send_command_input", id=job, text="rm -rf /\n")
            assert denied["error_type"] == "denied"
            await session.ok("send_command_input", id=job, text="ls\n", close=True)
            assert (await session.finish(job))["stdout"] == "ls\n"
        audit = rig.governance.audit
        assert audit is not None
        rows = audit.query(tool="send_command_input")
        assert sorted(r.decision for r in rows) == ["allow", "deny"]
    with Rig(workspace, config={"tools": {"deny": ["group:background"]}}) as rig:
        names = {tool.name for tool in rig.registry.list()}
        assert "send_command_input" not in names and "command_output" not in names


def _links(pid: str) -> list[str]:
    """What a process's descriptors are (pipe:[inode], paths); one that closes meanwhile is left out."""
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return links


async def test_the_pipe_is_closed_everywhere_once_the_command_is_over(workspace: Path) -> None:
    with Rig(workspace, config=_config("off")) as rig:
        async with BackgroundJobs.open() as jobs:
            session = Session(rig, jobs)
            job = await session.start("readlink /proc/self/fd/0; echo $PPID")  # its parent: the keeper
            pipe, keeper = (await session.finish(job))["stdout"].split()
            assert pipe.startswith("pipe:[")
            held, ours = _links(keeper), _links(str(os.getpid()))
            later = await session.ok("run_command", command=f"ls -l /proc/$$/fd /proc/{keeper}/fd")
    assert pipe not in held and pipe not in ours  # the keeper (kept for the next command) and toolrig closed it
    assert pipe not in later["stdout"]  # nor does it reach a later command


_WIDE = st.sampled_from(["a", "é", "€", "😀", "\ud800", "\x00", "\n"])  # 1 to 4 bytes, a lone surrogate, NUL


@settings(max_examples=200, deadline=None)
@given(text=st.text(_WIDE | st.characters(codec=None, exclude_categories=()), max_size=6000), room=st.integers(1, 4))
def test_what_a_send_writes_is_a_prefix_of_whole_characters(text: str, room: int) -> None:
    """Any text (lone surrogates, NULs, 4-byte characters) into a pipe of ``room`` pages, already partly full."""
    data = text.encode(errors="replace")
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, room * 4096)
        os.set_blocking(write_end, False)
        os.write(write_end, b"." * 3000)  # a pipe that already holds something
        sent = _feed(write_end, data)
        os.set_blocking(read_end, False)
        got = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(read_end, 65536):
                got += chunk
    finally:
        os.close(read_end)
        os.close(write_end)
    assert got == b"." * 3000 + data[:sent]
    data[:sent].decode()  # strict: raises if a write ended inside a character
    assert sent == len(data) or sent + 3000 > (room - 1) * 4096  # it stops only when the pipe is (nearly) full


@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_argv_mode_without_the_final_directory_pipe_gets_its_input_too(workspace: Path, sandbox: str) -> None:
    """No final-directory pipe in the request (argv mode): stdin is then the fifth descriptor, not the sixth."""
    config = {"tool_config": {"run_command": {"sandbox": sandbox, "mode": "argv"}}}
    with Rig(workspace, config=config) as rig:
        async with BackgroundJobs.open() as jobs:
            session = Session(rig, jobs)
            job = await session.start("cat")
            await session.ok("send_command_input", id=job, text="argv\n", close=True)
            assert (await session.finish(job))["stdout"] == "argv\n"


async def test_no_descriptor_left_for_the_pipe_is_an_error_result_and_nothing_starts() -> None:
    cleaned: list[bool] = []

    async def never(*_: object) -> ProcessResult:
        raise AssertionError("started without its pipe")

    async with BackgroundJobs.open() as jobs:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        fillers: list[int] = []
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
            with contextlib.suppress(OSError):
                while True:
                    fillers.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
            with pytest.raises(ToolError) as caught:
                jobs.start("cat", None, never, lambda: cleaned.append(True))
        finally:
            for fd in fillers:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert caught.value.error_type.value == "unavailable" and "No pipe for its input" in caught.value.message
    assert cleaned == [True] and jobs.rows() == []
