"""Lifecycle hooks: code that runs before and after prompts, responses and tool calls.

Python hooks subclass ``Hooks`` and override the points they care about. A hook that fails is logged
and never aborts the run, with one deliberate exception: ``before_tool`` may refuse a call by raising
``ToolError`` (its message is what the model sees).

Script hooks (``ScriptHooks``) are files named ``{point}.{name}.sh`` or ``.py`` in ``~/.toolrig/hooks/``
and, in a trusted workspace only, ``.toolrig/hooks/``. Trust model: a script runs with the user's rights,
so only the user's own directory and directories the user trusted are read; what the model wrote reaches
a script only as data in environment variables, never as part of its command line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Awaitable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from toolrig.errors import ErrorType, ToolError
from toolrig.scope import HookRunner

if TYPE_CHECKING:
    from toolrig.gate import Extensions, Reserved, ToolCall
    from toolrig.result import ToolResult

log = logging.getLogger("toolrig.hooks")

HookPoint = Literal["before_prompt", "after_response", "before_tool", "after_tool"]
HOOK_POINTS: tuple[HookPoint, ...] = ("before_prompt", "after_response", "before_tool", "after_tool")


@dataclass(frozen=True, slots=True)
class HookEvent:
    point: HookPoint
    session_id: str | None = None
    agent_id: str | None = None
    message: str | None = None  # before_prompt: the user's prompt
    response: str | None = None  # after_response: the model's final text
    tool: str | None = None
    tool_args: dict[str, Any] | None = None
    tool_result: ToolResult | None = None


class Hooks:
    """Override any point; each runs in registration order. The defaults do nothing."""

    async def before_prompt(self, event: HookEvent) -> None:
        return None

    async def after_response(self, event: HookEvent) -> None:
        return None

    async def before_tool(self, event: HookEvent) -> None:
        """Raise ``ToolError`` (usually ``denied``) to block the call."""
        return None

    async def after_tool(self, event: HookEvent) -> None:
        return None


class HookChain:
    """The hooks of one Rig, run point by point in order, each failure isolated."""

    def __init__(self) -> None:
        self._hooks: list[Hooks] = []
        self.enabled = True

    def add(self, hooks: Hooks) -> Hooks:
        self._hooks.append(hooks)
        _hooks_arrived()  # before the next call's gate: every hook gate walks from now on
        return hooks

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A chain that arrives whole (unpickled in a worker process, copied) holds hooks ``add`` never saw."""
        self.__dict__.update(state)
        if self._hooks:
            _hooks_arrived()

    def __len__(self) -> int:
        return len(self._hooks)

    def __iter__(self) -> Iterator[Hooks]:
        return iter(list(self._hooks))

    async def run(self, event: HookEvent) -> None:
        """Run every hook for ``event.point``; only a ``before_tool`` ToolError escapes (it blocks the call)."""
        if not self.enabled:
            return
        for hooks in list(self._hooks):
            try:
                await getattr(hooks, event.point)(replace(event))
            except ToolError:
                if event.point == "before_tool":
                    raise
                log.warning("%s hook %r raised ToolError outside before_tool; ignored", event.point, hooks)
            except Exception:
                log.exception("%s hook %r failed; the run goes on", event.point, hooks)


# ---------------------------------------------------------------------------------------------- scripts

SCRIPT_NAME = re.compile(r"^(before_prompt|after_response|before_tool|after_tool)\.[A-Za-z0-9_.-]+\.(sh|py)$")
BLOCK_EXIT_CODE = 2
DEFAULT_SCRIPT_TIMEOUT = 10.0
_ENV_VALUE_LIMIT = 100_000  # one environment string may not exceed 128 KiB on Linux
_STDERR_LIMIT = 4_000


def _env_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\x00", "")
    return text if len(text) <= _ENV_VALUE_LIMIT else text[:_ENV_VALUE_LIMIT]


def hook_environment(event: HookEvent) -> dict[str, str]:
    """The ``TOOLRIG_HOOK_*`` variables a script sees; values it has no use for are empty strings."""
    result = event.tool_result.model_dump(mode="json") if event.tool_result is not None else None
    return {
        "TOOLRIG_HOOK_POINT": event.point,
        "TOOLRIG_HOOK_SESSION": event.session_id or "",
        "TOOLRIG_HOOK_AGENT": event.agent_id or "",
        "TOOLRIG_HOOK_MESSAGE": _env_value(event.message or ""),
        "TOOLRIG_HOOK_RESPONSE": _env_value(event.response or ""),
        "TOOLRIG_HOOK_TOOL": event.tool or "",
        "TOOLRIG_HOOK_TOOL_ARGS": _env_value(event.tool_args) if event.tool_args is not None else "",
        "TOOLRIG_HOOK_TOOL_RESULT": _env_value(result) if result is not None else "",
    }


class ScriptHooks(Hooks):
    """Runs the script hooks of each point in name order, each with a timeout, each failure isolated.

    A ``before_tool`` script that exits 2 blocks the call and its stderr is the reason the model reads;
    any other failure or a timeout is logged and the run goes on.
    """

    def __init__(self, scripts: Iterable[Path], *, cwd: Path, timeout: float = DEFAULT_SCRIPT_TIMEOUT) -> None:
        self.cwd = cwd
        self.timeout = timeout
        self.scripts: dict[str, list[Path]] = {point: [] for point in HOOK_POINTS}
        for script in sorted(scripts, key=lambda p: p.name):  # stable: equal names keep directory order
            match = SCRIPT_NAME.match(script.name)
            if match:
                self.scripts[match.group(1)].append(script)

    @classmethod
    def discover(
        cls, directories: Iterable[Path], *, cwd: Path, timeout: float = DEFAULT_SCRIPT_TIMEOUT
    ) -> ScriptHooks:
        found: list[Path] = []
        for directory in directories:
            if directory.is_dir():
                found.extend(p for p in sorted(directory.iterdir()) if p.is_file() and SCRIPT_NAME.match(p.name))
        return cls(found, cwd=cwd, timeout=timeout)

    def __len__(self) -> int:
        return sum(len(paths) for paths in self.scripts.values())

    async def before_prompt(self, event: HookEvent) -> None:
        await self._run_all(event)

    async def after_response(self, event: HookEvent) -> None:
        await self._run_all(event)

    async def before_tool(self, event: HookEvent) -> None:
        await self._run_all(event)

    async def after_tool(self, event: HookEvent) -> None:
        await self._run_all(event)

    async def _run_all(self, event: HookEvent) -> None:
        scripts = self.scripts[event.point]
        if not scripts:
            return
        env = {**os.environ, **hook_environment(event)}
        for script in scripts:
            code, stderr = await self._run(script, env)
            if code == BLOCK_EXIT_CODE and event.point == "before_tool":
                raise ToolError(
                    ErrorType.DENIED,
                    stderr.strip() or f"The hook {script.name} blocked this call.",
                    "A hook of the user refused this call; do not retry it unchanged.",
                )
            if code not in (0, None):
                log.warning("%s hook %s exited %s: %s", event.point, script, code, stderr.strip()[:500])

    async def _run(self, script: Path, env: dict[str, str]) -> tuple[int | None, str]:
        """Run one script; (exit code, stderr), or (None, "") when it could not run or timed out."""
        interpreter = sys.executable if script.suffix == ".py" else "bash"
        try:
            process = await anyio.open_process(
                [interpreter, str(script)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=True,  # its own process group, so a timeout stops its children too
            )
        except OSError as exc:
            log.warning("hook %s could not start: %s", script, exc)
            return None, ""
        chunks: list[bytes] = []
        async with process:
            with anyio.move_on_after(self.timeout) as scope:
                if process.stderr is not None:
                    async for chunk in process.stderr:
                        if sum(map(len, chunks)) < _STDERR_LIMIT:
                            chunks.append(chunk)
                await process.wait()
            if scope.cancelled_caught:
                _kill_group(process.pid)
                with anyio.CancelScope(shield=True):
                    await process.wait()
                log.warning("hook %s did not finish within %gs and was stopped", script, self.timeout)
                return None, ""
        return process.returncode, b"".join(chunks).decode(errors="replace")[:_STDERR_LIMIT]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# Whether any HookChain in this process has held a hook. Until one has, no chain a gate could read (its
# Rig's, or a run's in its call scope) has anything to run, so the gates wait outside the executor's
# extension points; ``HookChain.add`` wakes every one of them, for good, before it returns.
# The flag is read without the lock (``add``'s common case); it turns true only once every waiting gate is
# awake, and a gate joins the waiting ones under the same lock as it reads the flag, so no gate is missed: a
# rig built in one thread while another adds the first hook (a worker thread, a second event loop) wakes too.
_hooks_anywhere = False
_waiting: weakref.WeakSet[HookGate] = weakref.WeakSet()
_arrival = threading.Lock()


def _hooks_arrived() -> None:
    if not _hooks_anywhere:  # the common case, once a hook exists: no lock
        _wake_waiting_gates()


def _wake_waiting_gates() -> None:
    global _hooks_anywhere
    with _arrival:
        if _hooks_anywhere:
            return
        for gate in list(_waiting):
            gate.wake()
        _waiting.clear()
        _hooks_anywhere = True


class HookGate:
    """The one hook gate at the tool points, for the Rig's hooks and the calling run's alike.

    ``before_tool`` runs the Rig's chain, then the run's; a refusal from either is the same decision
    (``deny`` by ``hooks.before_tool``) in the result and the audit row. ``after_tool`` runs only for calls
    that ran: a call refused, unknown or with invalid arguments never reaches a tool, so no hook sees it.
    """

    def __init__(self, chain: HookChain) -> None:
        self.chain = chain
        self._places: tuple[Reserved, Reserved] | None = None

    def install(self, extensions: Extensions) -> None:
        """Take this gate's places at ``before_tool`` and ``after_tool``: now if any hook exists, else on the first."""
        self._places = (
            extensions.reserve("before_tool", self.before, awake=False),
            extensions.reserve("after_tool", self.after, awake=False),
        )
        with _arrival:  # read the flag and join the waiting gates in one step (see ``_hooks_arrived``)
            if not _hooks_anywhere:
                _waiting.add(self)
                return
        self.wake()

    def wake(self) -> None:
        if self._places is not None:
            for place in self._places:
                place.wake()

    def _chains(self, call: ToolCall) -> list[HookRunner]:
        chains: list[HookRunner] = [self.chain] if self.chain.enabled and len(self.chain) else []
        own = call.scope.hooks  # the calling run's own (``RunOptions.hooks``), passed with the call
        if own is not None and len(own):
            chains.append(own)
        return chains

    def before(self, call: ToolCall) -> Awaitable[None] | None:
        if call.dry_run or not (self.chain._hooks or call.scope.hooks):
            return None  # `policy explain` reports the hooks, it does not run scripts; and nothing to run
        return self._before(call)

    async def _before(self, call: ToolCall) -> None:
        chains = self._chains(call)
        event = HookEvent("before_tool", call.session_id, call.agent_id, tool=call.name, tool_args=_args_read(call))
        for chain in chains:
            try:
                await chain.run(event)
            except ToolError:
                call.verdict = "deny"
                call.decided_by = "hooks.before_tool"
                raise

    def after(self, call: ToolCall, result: ToolResult) -> Awaitable[ToolResult] | ToolResult:
        if not call.ran or not (self.chain._hooks or call.scope.hooks):
            return result  # nothing to run: the executor skips the await
        return self._after(call, result)

    async def _after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        chains = self._chains(call)
        if chains:
            event = HookEvent(
                "after_tool",
                call.session_id,
                call.agent_id,
                tool=call.name,
                tool_args=_args_read(call),
                tool_result=result,
            )
            for chain in chains:
                await chain.run(event)
        return result


def _args_read(call: ToolCall) -> dict[str, Any]:
    """The arguments as the tool reads them (a model's ``file_path`` for write_file is its ``path``).

    A hook that checks ``path`` cannot be passed by another spelling the argument repair accepts; the raw
    arguments only when validation never ran.
    """
    return call.input.model_dump(mode="json", exclude_unset=True) if call.input is not None else call.raw_args
