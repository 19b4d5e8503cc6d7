"""The body of ``toolrig run``: kept apart so that ``toolrig --help`` imports only click."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import click

from toolrig.agent.errors import RunError
from toolrig.agent.state import RunOptions
from toolrig.cli import make_rig, terminal_channel
from toolrig.commands._agent_common import EXIT_ABORTED, EXIT_PAUSED, EXIT_RUN_FAILED, check_provider, fail, short_args
from toolrig.events import Event, event_to_json


class PlainPrinter:
    """Text to stdout as it streams; tool activity and errors to stderr, one short line each."""

    def __init__(self) -> None:
        self.at_line_start = True

    def __call__(self, event: Event) -> None:
        if event.type == "stream_text":
            sys.stdout.write(event.text)
            sys.stdout.flush()
            self.at_line_start = event.text.endswith("\n")
        elif event.type == "tool_call":
            self._newline()
            click.echo(f"→ {event.name}({short_args(event.args)})", err=True)
        elif event.type == "tool_result":
            mark = "✗" if event.is_error else "✓"
            click.echo(f"{mark} {event.name}: {event.preview}", err=True)
        elif event.type == "done":
            self._newline()

    def _newline(self) -> None:
        if not self.at_line_start:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.at_line_start = True


def json_printer(event: Event) -> None:
    sys.stdout.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _paused(rig: Any, result: Any) -> None:
    """The run waits for answers nobody here could give: keep its state and say how to go on (exit 3)."""
    from toolrig.sandbox.atomic import atomic_write_text

    state = result.state
    folder = rig.workspace.state_dir / "paused"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{state.session_id}.json"
    atomic_write_text(path, state.to_json())
    asked = [q["question"] for p in state.pending for q in p.questions]
    waiting = f"{len(asked)} question(s)" if asked else "approval"
    click.echo(f"toolrig: the run is paused, waiting for {waiting}; its state is in {path}", err=True)
    for question in asked:
        click.echo(f"  ? {question}", err=True)
    click.echo("  resume it with toolrig.agent.resume_run(state, answers={call_id: [...]})", err=True)
    sys.exit(EXIT_PAUSED)


def run_once(
    prompt: str,
    *,
    as_json: bool,
    max_budget: float | None,
    rig_root: Path,
    model: str | None,
    resume: str | None,
    continue_latest: bool,
    max_turns: int | None,
    thinking: Any,
    effort: Any,
    agent: str | None,
    agent_id: str | None = None,
) -> None:
    from toolrig.agent.loop import run_agent

    # A person at the terminal answers approvals; otherwise governance's `approvals.fallback` does.
    rig = make_rig(rig_root, agent=agent, approval_channel=terminal_channel())
    check_provider(rig, model)
    if resume and continue_latest:
        fail("use either --resume ID or --continue, not both", kind="usage")
    options = RunOptions(
        model=model,
        session_id=resume,
        continue_latest=continue_latest,
        max_turns=max_turns,
        thinking=thinking,
        effort=effort,
        max_budget_usd=max_budget,
        agent_id=agent_id,
        # ask_user: a person at the terminal answers; without one the run pauses with the questions.
        questions="ask" if sys.stdin.isatty() else "pause",
    )
    printer = json_printer if as_json else PlainPrinter()

    async def run() -> object:
        async with rig:  # MCP servers in the config stay up for the whole run, and stop with it
            return await run_agent(prompt, options, rig=rig, on_event=printer)

    try:
        result = anyio.run(run)
    except RunError as exc:
        if not as_json:  # the JSON stream already carries the error event
            click.echo(f"toolrig: run failed ({exc.kind}): {exc.message}", err=True)
        sys.exit(EXIT_RUN_FAILED)
    except KeyboardInterrupt:
        fail("interrupted", EXIT_ABORTED, kind="interrupted")
    if getattr(result, "stop_reason", "") == "paused":
        _paused(rig, result)
    if getattr(result, "stop_reason", "") == "max_tokens":
        # The answer is incomplete: a script must not take it for a finished run.
        if not as_json:  # the JSON stream's done event already says stop_reason "max_tokens"
            click.echo(
                f"toolrig: the answer was cut off at the token limit (llm.max_tokens = {rig.config.llm.max_tokens}); "
                "raise it or ask for a shorter answer",
                err=True,
            )
        sys.exit(EXIT_RUN_FAILED)
