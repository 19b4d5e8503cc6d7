from __future__ import annotations

import copy
import json
import logging
import pickle
import weakref
from functools import partial
from pathlib import Path

import anyio
import pytest

import toolrig.hooks as hooks_module
from tests.conftest import Call
from tests.support.interleave import Paused
from tests.support.run_hooks import scope_with_hooks
from tests.support.sample_tools import all_tools
from toolrig import Rig, ToolError
from toolrig.config import set_trust
from toolrig.errors import ErrorType
from toolrig.executor import Extensions
from toolrig.hooks import HookChain, HookEvent, HookGate, Hooks, hook_environment
from toolrig.policy.audit import AuditLog
from toolrig.registry import Registry

pytestmark = pytest.mark.anyio


class Recorder(Hooks):
    def __init__(self, label: str, log: list[str]) -> None:
        self.label = label
        self.log = log

    async def before_tool(self, event: HookEvent) -> None:
        self.log.append(f"{self.label}:before:{event.tool}:{event.tool_args}")
        if event.tool_args and event.tool_args.get("text") == f"block-{self.label}":
            raise ToolError(ErrorType.DENIED, f"{self.label} blocked it")

    async def after_tool(self, event: HookEvent) -> None:
        assert event.tool_result is not None
        self.log.append(f"{self.label}:after:{event.tool_result.is_error}")


class Broken(Hooks):
    async def before_tool(self, event: HookEvent) -> None:
        raise RuntimeError("hook bug")

    async def after_tool(self, event: HookEvent) -> None:
        raise RuntimeError("hook bug")


def rig_with(workspace: Path, *hooks: Hooks) -> Rig:
    return Rig(workspace, config={}, registry=Registry(all_tools()), hooks=hooks)


async def test_python_hooks_run_in_order_around_the_call(workspace: Path) -> None:
    log: list[str] = []
    rig = rig_with(workspace, Recorder("a", log), Recorder("b", log))
    assert not (await rig.call("echo", {"text": "x"})).is_error
    assert log == ["a:before:echo:{'text': 'x'}", "b:before:echo:{'text': 'x'}", "a:after:False", "b:after:False"]


async def test_before_tool_can_block_and_its_message_reaches_the_model(workspace: Path) -> None:
    log: list[str] = []
    rig = rig_with(workspace, Recorder("a", log), Recorder("b", log))
    result = await rig.call("echo", {"text": "block-a"})
    assert result.error_type == "denied" and result.message == "a blocked it"
    # after_tool fires only for calls that ran (issue 11, 3): this one never reached the tool.
    assert log == ["a:before:echo:{'text': 'block-a'}"]


async def test_a_failing_hook_is_logged_and_never_fails_the_call(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[str] = []
    rig = rig_with(workspace, Broken(), Recorder("after-broken", log))
    with caplog.at_level(logging.ERROR, logger="toolrig.hooks"):
        result = await rig.call("echo", {"text": "x"})
    assert not result.is_error
    assert log[0].startswith("after-broken:before") and log[1] == "after-broken:after:False"
    assert sum("hook bug" in (r.exc_text or "") for r in caplog.records) == 2


async def test_prompt_and_response_points_run_and_disabled_chain_skips_all() -> None:
    seen: list[str] = []

    class Prompts(Hooks):
        async def before_prompt(self, event: HookEvent) -> None:
            seen.append(f"prompt:{event.message}")

        async def after_response(self, event: HookEvent) -> None:
            seen.append(f"response:{event.response}")

    chain = HookChain()
    chain.add(Prompts())
    await chain.run(HookEvent("before_prompt", message="hi"))
    await chain.run(HookEvent("after_response", response="hello"))
    chain.enabled = False
    await chain.run(HookEvent("before_prompt", message="ignored"))
    assert seen == ["prompt:hi", "response:hello"]


# ---------------------------------------------------------------------------------------------- scripts


def script(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(body)
    return path


@pytest.fixture
def user_hooks(toolrig_home: Path) -> Path:
    return toolrig_home / "hooks"


async def test_script_hooks_run_in_name_order_with_the_call_in_their_environment(
    workspace: Path, user_hooks: Path, tmp_path: Path
) -> None:
    out = tmp_path / "seen.jsonl"
    dump = (
        'python3 -c "import json, os; print(json.dumps({k: v for k, v in os.environ.items() '
        f"if k.startswith('TOOLRIG_HOOK_')}} | {{'who': '$1'}}))\" >> {out}\n"
    )
    script(user_hooks, "before_tool.20-second.sh", dump.replace("$1", "second"))
    script(user_hooks, "before_tool.10-first.sh", dump.replace("$1", "first"))
    script(
        user_hooks,
        "after_tool.audit.py",
        f"import os\nopen({str(out)!r}, 'a').write(os.environ['TOOLRIG_HOOK_TOOL_RESULT'] + '\\n')\n",
    )
    script(user_hooks, "before_tool.notes.txt", "exit 2\n")  # not a hook: wrong suffix
    rig = rig_with(workspace)
    assert not (await rig.call("echo", {"text": "hi"}, session_id="s-9")).is_error
    first, second, result = (json.loads(line) for line in out.read_text().splitlines())
    assert (first["who"], second["who"]) == ("first", "second")
    assert first["TOOLRIG_HOOK_POINT"] == "before_tool" and first["TOOLRIG_HOOK_TOOL"] == "echo"
    assert json.loads(first["TOOLRIG_HOOK_TOOL_ARGS"]) == {"text": "hi"}
    assert first["TOOLRIG_HOOK_SESSION"] == "s-9" and first["TOOLRIG_HOOK_TOOL_RESULT"] == ""
    assert result == {"is_error": False, "output": {"text": "hi"}}


async def test_prompt_and_response_scripts_see_the_message_and_the_response(
    workspace: Path, user_hooks: Path, tmp_path: Path
) -> None:
    out = tmp_path / "log"
    script(user_hooks, "before_prompt.log.sh", f'printf "%s|" "$TOOLRIG_HOOK_MESSAGE" >> {out}\n')
    script(user_hooks, "after_response.log.sh", f'printf "%s|" "$TOOLRIG_HOOK_RESPONSE" >> {out}\n')
    rig = rig_with(workspace)
    await rig.hooks.run(HookEvent("before_prompt", "s", message="what's 2+2?\nthanks"))
    await rig.hooks.run(HookEvent("after_response", "s", response="4"))
    assert out.read_text() == "what's 2+2?\nthanks|4|"


def test_a_before_tool_script_exiting_2_blocks_with_its_stderr(
    consumer: Call, user_hooks: Path, workspace: Path
) -> None:
    script(
        user_hooks,
        "before_tool.guard.sh",
        '[ "$TOOLRIG_HOOK_TOOL" = shell ] && { echo "no shell on fridays" >&2; exit 2; }\nexit 0\n',
    )
    from tests.support.governed_tools import Shell

    Shell.log.clear()
    result = consumer("shell", {"command": "ls"})
    assert (result["error_type"], result["message"]) == ("denied", "no shell on fridays")
    assert Shell.log == []
    assert not consumer("calculate", {"expression": "1"})["is_error"]
    from tests.policy.conftest import last_row

    assert last_row(workspace).decision == "allow"
    log = AuditLog(workspace / ".toolrig")
    blocked = log.query(tool="shell")[-1]
    log.close()
    assert (blocked.decision, blocked.rule) == ("deny", "hooks.before_tool")


async def test_failing_and_slow_scripts_are_logged_and_the_call_goes_on(
    workspace: Path, user_hooks: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pid_file = tmp_path / "child.pid"
    script(user_hooks, "before_tool.1-crash.sh", "echo broken >&2\nexit 1\n")
    script(user_hooks, "before_tool.2-slow.sh", f"sleep 60 &\necho $! > {pid_file}\nwait\n")
    script(user_hooks, "after_tool.block.sh", "exit 2\n")  # exit 2 blocks only before a call
    rig = Rig(workspace, config={"hooks": {"timeout_seconds": 2}}, registry=Registry(all_tools()))
    with caplog.at_level(logging.WARNING, logger="toolrig.hooks"), anyio.fail_after(20):
        result = await rig.call("echo", {"text": "x"})
    assert not result.is_error
    messages = [r.getMessage() for r in caplog.records]
    assert any("1-crash.sh exited 1: broken" in m for m in messages)
    assert any("2-slow.sh did not finish within 2s" in m for m in messages)
    assert any("after_tool hook" in m and "exited 2" in m for m in messages)
    child = int(pid_file.read_text())
    status = Path(f"/proc/{child}/status")
    assert not status.exists() or "zombie" in status.read_text()  # the script's own children were stopped too


async def test_workspace_hooks_run_only_in_a_trusted_workspace(workspace: Path, tmp_path: Path) -> None:
    out = tmp_path / "ran"
    script(workspace / ".toolrig" / "hooks", "before_tool.ws.sh", f"echo ran >> {out}\n")
    await rig_with(workspace).call("echo", {"text": "x"})
    assert not out.exists()
    set_trust(workspace)
    await rig_with(workspace).call("echo", {"text": "x"})
    assert out.read_text() == "ran\n"


async def test_hooks_enabled_false_runs_no_hook(workspace: Path, user_hooks: Path, tmp_path: Path) -> None:
    out = tmp_path / "ran"
    script(user_hooks, "before_tool.x.sh", f"echo ran >> {out}\n")
    log: list[str] = []
    rig = Rig(
        workspace, config={"hooks": {"enabled": False}}, registry=Registry(all_tools()), hooks=[Recorder("py", log)]
    )
    await rig.call("echo", {"text": "x"})
    assert not out.exists() and log == []


def test_hook_environment_is_safe_for_any_value() -> None:
    env = hook_environment(HookEvent("before_prompt", message="a\x00b" + "x" * 200_000))
    assert "\x00" not in env["TOOLRIG_HOOK_MESSAGE"] and len(env["TOOLRIG_HOOK_MESSAGE"]) == 100_000
    assert env["TOOLRIG_HOOK_TOOL_ARGS"] == "" and env["TOOLRIG_HOOK_AGENT"] == ""


class Lingering(Hooks):
    """An after_tool hook that is still running when the caller gives up (an MCP cancel, a stopped run)."""

    def __init__(self) -> None:
        self.started = anyio.Event()

    async def after_tool(self, event: HookEvent) -> None:
        self.started.set()
        await anyio.sleep_forever()


async def test_a_call_cancelled_while_an_after_tool_hook_runs_is_still_one_audit_row(workspace: Path) -> None:
    # The tool had run (its file is written) when the caller's cancellation came in the hook: the row was lost.
    hook = Lingering()
    rig = Rig(workspace, config={"approvals": {"mode": "off"}}, hooks=[hook])
    with anyio.fail_after(60):  # a bound for a broken build only: the call ends as soon as it is cancelled
        await cancel_during_the_hook(rig, hook)
    assert (workspace / "written.txt").read_text() == "the tool ran\n"
    assert rig.governance.audit is not None
    rows = [row for row in rig.governance.audit.query(limit=10) if row.call_id == "c-linger"]
    assert [(row.tool, row.error_type) for row in rows] == [("write_file", None)]  # what the tool did, once


async def cancel_during_the_hook(rig: Rig, hook: Lingering) -> None:
    async with anyio.create_task_group() as group:

        async def call() -> None:
            await rig.call("write_file", {"path": "written.txt", "content": "the tool ran\n"}, call_id="c-linger")

        group.start_soon(call)
        await hook.started.wait()
        group.cancel_scope.cancel()


# ------------------------------------------------------------- the hook gate waits off the path until a hook exists


@pytest.fixture
def no_hooks_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as if no HookChain had ever held a hook (other tests have added some)."""
    monkeypatch.setattr(hooks_module, "_hooks_anywhere", False)
    monkeypatch.setattr(hooks_module, "_waiting", weakref.WeakSet())


async def test_a_hook_added_to_the_rig_after_calls_runs_from_the_next_call(workspace: Path, no_hooks_yet: None) -> None:
    rig = rig_with(workspace)
    assert not (await rig.call("echo", {"text": "a"})).is_error
    assert rig.extensions.before_tool == [] and rig.extensions.after_tool == []  # nothing to walk yet
    log: list[str] = []
    rig.hooks.add(Recorder("late", log))
    assert not (await rig.call("echo", {"text": "b"})).is_error
    assert log == ["late:before:echo:{'text': 'b'}", "late:after:False"]
    refused = await rig.call("echo", {"text": "block-late"})
    assert refused.error_type == "denied" and refused.message == "late blocked it"


async def test_a_hook_added_to_a_runs_chain_after_calls_runs_for_the_rigs_next_call(
    workspace: Path, no_hooks_yet: None
) -> None:
    rig = rig_with(workspace)
    assert not (await rig.call("echo", {"text": "a"})).is_error
    chain = HookChain()
    run = scope_with_hooks(chain)
    assert not (await rig.call("echo", {"text": "b"}, scope=run)).is_error
    log: list[str] = []
    chain.add(Recorder("run", log))
    assert not (await rig.call("echo", {"text": "c"}, scope=run)).is_error
    assert log == ["run:before:echo:{'text': 'c'}", "run:after:False"]
    # `policy explain` walks the same gate: it reports, and runs no hook.
    call, result = await rig.executor.decide("echo", {"text": "d"})
    assert result is None and call.verdict == "allow" and len(log) == 2


def test_a_gate_installed_while_another_thread_adds_the_first_hook_is_woken(no_hooks_yet: None) -> None:
    """A rig built in one thread while another adds the process's first hook still runs its hooks.

    The gate read "no hook anywhere", then the hook arrived before it joined the waiting gates: it would
    have waited for good, and every hook added to its chain later (no longer the first) been skipped.
    """
    extensions = Extensions()
    gate = HookGate(HookChain())
    # The installing thread stops as it takes its first place, having read that no hook exists...
    with Paused(partial(gate.install, extensions), Extensions.reserve.__code__, "call"):
        HookChain().add(Hooks())  # ...when the process's first hook arrives, all the way.
    assert extensions.before_tool == [gate.before] and extensions.after_tool == [gate.after]


async def test_a_hook_chain_put_in_the_rigs_place_is_the_one_the_gate_runs(workspace: Path) -> None:
    rig = rig_with(workspace)
    log: list[str] = []
    rig.hooks = HookChain()
    rig.hooks.add(Recorder("new", log))
    refused = await rig.call("echo", {"text": "block-new"})
    assert refused.error_type == "denied" and refused.message == "new blocked it"
    assert log == ["new:before:echo:{'text': 'block-new'}"]


class Blocker(Hooks):
    """A hook that travels (pickle, copy): it refuses every call."""

    async def before_tool(self, event: HookEvent) -> None:
        raise ToolError(ErrorType.DENIED, "the travelling hook blocked it")


@pytest.mark.parametrize("travel", ["pickle", "deepcopy"])
async def test_a_hook_chain_that_arrives_whole_wakes_the_hook_gates(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, travel: str
) -> None:
    """A chain unpickled in a process where no chain ever held a hook (a worker's), or copied, did not come
    through ``add``: its hooks still run, for the rig's chain and a run's alike."""
    chain = HookChain()
    chain.add(Blocker())
    sent = pickle.dumps(chain)
    monkeypatch.setattr(hooks_module, "_hooks_anywhere", False)  # the receiving process: no hook yet
    monkeypatch.setattr(hooks_module, "_waiting", weakref.WeakSet())
    rig = rig_with(workspace)
    arrived = pickle.loads(sent) if travel == "pickle" else copy.deepcopy(chain)  # noqa: S301 # our own bytes
    refused = await rig.call("echo", {"text": "a"}, scope=scope_with_hooks(arrived))
    assert refused.error_type == "denied" and refused.message == "the travelling hook blocked it"


async def test_a_before_tool_hook_sees_the_names_the_tool_reads_not_the_spelling_sent(workspace: Path) -> None:
    """A hook guarding write_file's `path` must not be passed by `file_path`, which the argument repair accepts."""
    seen: list[object] = []

    class Guard(Hooks):
        async def before_tool(self, event: HookEvent) -> None:
            seen.append(event.tool_args)
            if event.tool_args and str(event.tool_args.get("path", "")).startswith("secret"):
                raise ToolError(ErrorType.DENIED, "not there")

    rig = Rig(workspace, config={}, hooks=[Guard()])
    result = await rig.call("write_file", {"file_path": "secret.txt", "content": "x"})
    assert result.error_type == "denied"
    assert seen == [{"path": "secret.txt", "content": "x"}]
    assert not (workspace / "secret.txt").exists()
