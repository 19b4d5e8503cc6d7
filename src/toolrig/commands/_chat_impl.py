"""The chat's control flow: the main thread reads prompts, the agent runs on an event loop thread.

Ctrl-C reaches the main thread, which turns it into the run's abort event: it cancels the turn (and any
approval question being asked), not the program. Everything shown comes from events.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
from rich.console import Console
from rich.text import Text

from toolrig.agent.errors import RunError
from toolrig.agent.providers import ProviderSettings, make_provider
from toolrig.agent.session import SessionStore
from toolrig.agent.state import RunOptions, RunResult
from toolrig.agent.usage import Usage
from toolrig.approvals.terminal import TerminalChannel
from toolrig.cli import make_rig
from toolrig.commands._agent_common import check_provider, fail
from toolrig.commands._chat_ui import ChatScreen, tool_rows
from toolrig.policy.audit import background_ends
from toolrig.rig import Rig
from toolrig.sandbox.background import BackgroundJobs

HELP = "/tools  /capabilities  /usage  /sessions  /exit   (Ctrl-C cancels a turn, Ctrl-D quits)"


class Chat:
    def __init__(self, rig: Rig, settings: ProviderSettings, options: dict[str, Any], console: Console) -> None:
        self.rig = rig
        self.settings = settings
        self.options = options
        self.console = console
        self.screen = ChatScreen(console)
        # Governance's terminal prompt (yes / always / no + reason), asked from the event loop's thread:
        # it reads the terminal without a thread of its own, so Ctrl-C (the run's abort) ends a question.
        self.approvals = TerminalChannel()
        self.session_id: str | None = options.get("resume")
        self.continue_latest: bool = bool(options.get("continue_latest"))
        self.usage = Usage()
        self.provider = make_provider(settings)
        self.jobs: BackgroundJobs | None = None

    def run(self) -> None:
        store = SessionStore.for_state_dir(self.rig.workspace.state_dir)
        if self.session_id and not store.exists(self.session_id):
            fail(f"no session {self.session_id!r} here (see `toolrig sessions list`)")
        if self.continue_latest:
            self.session_id = store.latest()
        if self.session_id:
            self.usage = store.usage(self.session_id)
        store.close()
        where = f"session {self.session_id}" if self.session_id else "new session"
        self.console.print(Text.assemble(("toolrig chat", "bold"), f" · {self.settings.model} · {where}"))
        self.console.print(Text(HELP, "dim"))
        with anyio.from_thread.start_blocking_portal() as portal:
            # MCP servers in the config stay up for the whole chat, not one call each, and stop with it.
            stop = portal.call(anyio.Event)
            held = portal.start_task_soon(keep_open, self.rig, stop)
            try:
                # Background commands belong to the chat, not to one prompt: a dev server lives until the chat ends.
                ends = background_ends(self.rig.governance.audit, "chat")
                with portal.wrap_async_context_manager(BackgroundJobs.open(on_end=ends)) as self.jobs:
                    self._prompts(portal)
            finally:
                portal.call(self._close)
                portal.call(stop.set)
                held.result()

    def _prompts(self, portal: anyio.from_thread.BlockingPortal) -> None:
        while True:
            try:
                line = self.console.input("[bold green]› [/]")
            except (EOFError, KeyboardInterrupt):
                self.console.print()
                return
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                if not self.command(line):
                    return
                continue
            self.turn(portal, self.followup(line))

    def followup(self, line: str) -> str:
        """A bare number picks the last answer's suggested follow-up with that number; anything else is sent as is."""
        suggested = self.screen.followups
        if line.isdigit() and 1 <= int(line) <= len(suggested):
            picked = suggested[int(line) - 1]
            self.console.print(Text.assemble(("› ", "dim"), (picked, "dim")))
            return picked
        return line

    def turn(self, portal: anyio.from_thread.BlockingPortal, line: str) -> None:
        self.screen.followups = []
        abort = portal.call(anyio.Event)
        options = RunOptions(
            model=self.options.get("model"),
            max_turns=self.options.get("max_turns"),
            session_id=self.session_id,
            abort=abort,
            approvals=self.approvals,
            provider=self.provider,
            background=self.jobs,
        )
        future = portal.start_task_soon(self._run, line, options)
        interrupted = False
        while True:
            try:
                result: RunResult = future.result()
                break
            except KeyboardInterrupt:
                if interrupted:
                    raise  # a second Ctrl-C while the turn winds down quits the chat
                interrupted = True
                portal.call(abort.set)
            except RunError:
                self.screen.finish_turn()
                return  # the screen already showed it, from the run's error event
            except Exception as exc:
                self.screen.finish_turn()
                self.console.print(Text(f"internal error: {type(exc).__name__}: {exc}", "bold red"))
                return
        self.screen.finish_turn()
        self.screen.show_followups()
        self.session_id = result.session_id
        self.usage.add(result.usage)

    async def _close(self) -> None:
        with anyio.move_on_after(5):
            await self.provider.aclose()

    async def _run(self, line: str, options: RunOptions) -> RunResult:
        from toolrig.agent.entry import run_agent

        return await run_agent(line, options, rig=self.rig, on_event=self.screen.on_event)

    def command(self, line: str) -> bool:
        """Run a slash command; False means quit."""
        name = line.split()[0].lower()
        if name in ("/exit", "/quit"):
            return False
        if name == "/tools":
            for row in tool_rows(self.rig.tools(), self.console.width):
                self.console.print(row, no_wrap=True, overflow="ellipsis")
        elif name == "/capabilities":
            from toolrig.catalog import capabilities

            self.console.print(capabilities.current(self.rig, self.rig.agent).rstrip(), markup=False)
        elif name == "/usage":
            u = self.usage
            self.console.print(
                f"{u.calls} model calls · {u.input:,} in · {u.output:,} out · {u.cache_read:,} cache read · "
                f"{u.cache_write:,} cache write · ${u.cost_usd:.4f}"
            )
        elif name == "/sessions":
            store = SessionStore.for_state_dir(self.rig.workspace.state_dir)
            for info in store.recent(10):
                mark = "*" if info.id == self.session_id else " "
                title = info.title.replace("\n", " ")[:50]
                line = f"{mark} {info.id}  {info.model:<20} {info.turns:>3} turns  {title}"
                self.console.print(line, no_wrap=True, overflow="ellipsis", markup=False)
            store.close()
        else:
            self.console.print(Text(f"unknown command {name}: {HELP}", "yellow"))
        return True


async def keep_open(rig: Rig, stop: anyio.Event) -> None:
    """Hold the rig open (``async with``) in a task of its own until ``stop``; other tasks call through it."""
    async with rig:
        await stop.wait()


def chat(rig_root: Path, **options: Any) -> None:
    rig = make_rig(rig_root, agent=options.get("agent"))
    settings = check_provider(rig, options.get("model"))
    updates = {k: options[k] for k in ("thinking", "effort") if options.get(k)}
    if updates:
        for key, value in updates.items():
            setattr(settings, key, value)
    if options.get("resume") and options.get("continue_latest"):
        fail("use either --resume ID or --continue, not both")
    # Ctrl-C must reach the main thread as KeyboardInterrupt even if something changed the handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    console = Console(highlight=False)
    Chat(rig, settings, options, console).run()
    sys.exit(0)
