"""The body of ``toolrig run``: kept apart so that ``toolrig --help`` imports only click."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import click

from toolrig.agent.errors import RunError
from toolrig.agent.state import RunOptions, RunState
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
    from toolrig.approvals.selector import printable
    from toolrig.commands._paused_runs import ResumeRefused, resume_hint, save

    state = result.state
    try:
        path = save(rig.workspace.state_dir, state)
    except ResumeRefused as exc:
        fail(f"the run is paused, but its state cannot be kept: {exc}", EXIT_PAUSED, kind="state")
    asked = [q["question"] for p in state.pending for q in p.questions]
    approvals = [p for p in state.pending if p.needs_approval]
    waiting = " and ".join(
        part
        for part in (f"{len(asked)} question(s)" if asked else "", f"{len(approvals)} approval(s)" if approvals else "")
        if part
    )
    click.echo(f"toolrig: the run is paused, waiting for {waiting or 'a person'}; its state is in {path}", err=True)
    # The model wrote the questions and the call: escaped, so they cannot redraw the lines around them
    # (the resume command below is what the person copies).
    for call in state.pending:
        for question in call.questions:
            labels = [o["label"] if isinstance(o, dict) else str(o) for o in question.get("options") or ()]
            choices = printable(f" [{' | '.join(labels)}]") if labels else ""
            shown = printable(str(question["question"]))
            click.echo(f"  ? {shown}{choices}  (call {printable(call.call_id)})", err=True)
        if call.needs_approval:
            why = printable(f"{call.tool}: {call.reason or 'needs approval'}")
            click.echo(f"  ! {why}  (call {printable(call.call_id)})", err=True)
    click.echo(f"  resume it (once) with: {resume_hint(state)}", err=True)
    sys.exit(EXIT_PAUSED)


def run_once(
    prompt: str | None,
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
    answers: str | None = None,
    decisions: str | None = None,
) -> None:
    from toolrig.agent.entry import resume_run, run_agent
    from toolrig.commands import _paused_runs as paused_runs

    if resume and continue_latest:
        fail("use either --resume ID or --continue, not both", kind="usage")
    if prompt is None and not resume:
        fail("give a PROMPT, or --resume SESSION to go on with a paused run", kind="usage")
    if prompt is not None and (answers is not None or decisions is not None):
        fail(
            "--answers and --decisions go on with a paused run: use them with --resume SESSION and no PROMPT",
            kind="usage",
        )
    # A person at the terminal answers approvals; otherwise governance's `approvals.fallback` does.
    rig = make_rig(rig_root, agent=agent, approval_channel=terminal_channel())
    state_dir = rig.workspace.state_dir
    resuming: tuple[RunState, paused_runs.Replies] | None = None
    if prompt is None and resume:
        try:
            state = paused_runs.claim(state_dir, resume)
            replies = paused_runs.replies_for(
                state,
                paused_runs.read_json_option(answers, "--answers"),
                paused_runs.read_json_option(decisions, "--decisions"),
            )
        except paused_runs.ResumeRefused as exc:
            fail(str(exc), kind="usage")
        resuming = (state, replies)
    elif resume and paused_runs.is_paused(state_dir, resume):
        fail(
            f"the session {resume!r} is paused, waiting for a person: go on with `toolrig run --resume {resume} "
            "--answers JSON` (no PROMPT) first",
            kind="usage",
        )
    check_provider(rig, model)
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
            if resuming is None:
                return await run_agent(prompt or "", options, rig=rig, on_event=printer)
            state, replies = resuming
            options.session_id = None  # the state names its session
            return await resume_run(
                state, replies.decisions, options, rig=rig, on_event=printer, answers=replies.answers
            )

    if resuming is not None:
        try:
            paused_runs.take(state_dir, resuming[0].session_id)  # single use: from here on, nobody else resumes it
        except paused_runs.ResumeRefused as exc:
            fail(str(exc), kind="usage")

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
