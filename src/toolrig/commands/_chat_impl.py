"""The chat's control flow: the terminal belongs to the main thread, the agent runs on an event loop thread.

The main thread reads prompts, answers approval questions the loop sends it, and turns Ctrl-C into the
run's abort event, so Ctrl-C cancels the turn rather than the program. Everything shown comes from events.
"""

from __future__ import annotations

import queue
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
from rich.console import Console
from rich.text import Text

from toolrig.agent.providers import ProviderSettings, make_provider
from toolrig.agent.session import SessionStore
from toolrig.agent.state import RunOptions, RunResult
from toolrig.agent.usage import Usage
from toolrig.approvals import ApprovalDecision, ApprovalRequest
from toolrig.cli import make_rig
from toolrig.commands._agent_common import check_provider, fail
from toolrig.commands._chat_ui import ChatScreen
from toolrig.rig import Rig

HELP = "/tools  /usage  /sessions  /exit   (Ctrl-C cancels a turn, Ctrl-D quits)"


@dataclass
class Question:
    requests: Sequence[ApprovalRequest]
    answer: Future[list[ApprovalDecision]] = field(default_factory=Future)


_TURN_DONE = object()


class TerminalApprovals:
    """The chat's approval channel: the loop asks, the main thread prompts (yes / always / no + reason)."""

    def __init__(self, questions: queue.Queue[object], screen: ChatScreen) -> None:
        self.questions = questions
        self.screen = screen
        self.always: set[str] = set()

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        if all(r.tool in self.always for r in requests):
            return [ApprovalDecision("allow_always", "allowed for this chat") for _ in requests]
        self.screen.stop_spinners()
        question = Question(requests)
        self.questions.put(question)
        answers = await anyio.to_thread.run_sync(question.answer.result, abandon_on_cancel=True)
        for request, answer in zip(requests, answers, strict=True):
            if answer.verdict == "allow_always":
                self.always.add(request.tool)
        return answers


def ask(console: Console, requests: Sequence[ApprovalRequest], read: Any = None) -> list[ApprovalDecision]:
    """Prompt for each request: y(es) / a(lways) / n(o), with an optional reason after a no."""
    read = read or console.input
    decisions = []
    for request in requests:
        console.print(Text.assemble(("? ", "bold yellow"), (f"{request.tool} wants approval", "bold")))
        details = ", ".join(request.subjects) or ", ".join(f"{k}={v!r}" for k, v in request.args.items())
        if details:
            console.print(Text(f"  {details}", "yellow"))
        if request.reason:
            console.print(Text(f"  ({request.reason})", "dim"))
        while True:
            answer = read("  allow? [y]es / [a]lways / [n]o: ").strip().lower()
            if answer in ("y", "yes"):
                decisions.append(ApprovalDecision("allow_once"))
            elif answer in ("a", "always"):
                decisions.append(ApprovalDecision("allow_always", patterns=tuple(request.subjects)))
            elif answer in ("n", "no"):
                reason = read("  reason (optional, the model reads it): ").strip()
                decisions.append(ApprovalDecision("deny", reason or "the user said no"))
            else:
                continue
            break
    return decisions


class Chat:
    def __init__(self, rig: Rig, settings: ProviderSettings, options: dict[str, Any], console: Console) -> None:
        self.rig = rig
        self.settings = settings
        self.options = options
        self.console = console
        self.screen = ChatScreen(console)
        self.questions: queue.Queue[object] = queue.Queue()
        self.approvals = TerminalApprovals(self.questions, self.screen)
        self.session_id: str | None = options.get("resume")
        self.continue_latest: bool = bool(options.get("continue_latest"))
        self.usage = Usage()
        self.provider = make_provider(settings)

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
            try:
                while True:
                    try:
                        line = self.console.input("[bold green]› [/]")
                    except (EOFError, KeyboardInterrupt):
                        self.console.print()
                        break
                    line = line.strip()
                    if not line:
                        continue
                    if line.startswith("/"):
                        if not self.command(line):
                            break
                        continue
                    self.turn(portal, line)
            finally:
                portal.call(self._close)

    def turn(self, portal: anyio.from_thread.BlockingPortal, line: str) -> None:
        abort = portal.call(anyio.Event)
        options = RunOptions(
            model=self.options.get("model"),
            max_turns=self.options.get("max_turns"),
            session_id=self.session_id,
            abort=abort,
            approvals=self.approvals,
            provider=self.provider,
        )
        future = portal.start_task_soon(self._run, line, options)
        future.add_done_callback(lambda _: self.questions.put(_TURN_DONE))
        interrupts = 0
        while True:
            try:
                item = self.questions.get()
                if item is _TURN_DONE:
                    break
                if isinstance(item, Question):
                    item.answer.set_result(ask(self.console, item.requests))
            except KeyboardInterrupt:
                interrupts += 1
                if interrupts > 1:
                    raise
                portal.call(abort.set)
                self._refuse_pending()
        self.screen.finish_turn()
        try:
            result: RunResult = future.result()
        except Exception:
            return
        self.session_id = result.session_id
        self.usage.add(result.usage)

    def _refuse_pending(self) -> None:
        """Answer questions still waiting after a Ctrl-C, so no worker thread waits forever."""
        while True:
            try:
                item = self.questions.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, Question):
                item.answer.set_result([ApprovalDecision("deny", "cancelled") for _ in item.requests])
            else:
                self.questions.put(item)
                return

    async def _close(self) -> None:
        with anyio.move_on_after(5):
            await self.provider.aclose()

    async def _run(self, line: str, options: RunOptions) -> RunResult:
        from toolrig.agent.loop import run_agent

        return await run_agent(line, options, rig=self.rig, on_event=self.screen.on_event)

    def command(self, line: str) -> bool:
        """Run a slash command; False means quit."""
        name = line.split()[0].lower()
        if name in ("/exit", "/quit"):
            return False
        if name == "/tools":
            for item in self.rig.tools():
                summary = item.description.split(". ")[0].rstrip(".")
                row = Text.assemble((f"{item.name:<20}", "cyan"), f" {summary}")
                self.console.print(row, no_wrap=True, overflow="ellipsis")
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


def chat(rig_root: Path, **options: Any) -> None:
    rig = make_rig(rig_root)
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
