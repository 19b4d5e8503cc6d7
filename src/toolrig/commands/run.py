"""``toolrig run "prompt"``: one non-interactive agent run; ``--json`` streams its events as JSON lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolrig.commands._agent_common import agent_options


class _JsonErrors(click.Command):
    """Under ``--json`` a usage mistake is a JSON line too: scripts never parse click's prose."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from toolrig.cli import JSON_ERRORS, report_error

        ctx.meta[JSON_ERRORS] = "--json" in args
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if not ctx.meta[JSON_ERRORS]:
                raise
            report_error(exc.format_message(), "usage")
            ctx.exit(2)


@click.command("run", cls=_JsonErrors)
@click.argument("prompt", required=False)
@click.option("--json", "as_json", is_flag=True, help="Stream every event as one JSON line (for scripts).")
@click.option("--max-budget", "max_budget", type=float, help="Stop the run when it has cost more than this (USD).")
@click.option(
    "--timeout",
    "timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Stop the run after this many seconds (exit 1); default: llm.run_timeout_seconds, else no limit.",
)
@click.option(
    "--agent-id",
    "agent_id",
    metavar="ID",
    help="The run's agent id: its memory (agents/ID/MEMORY.md), kv namespace and audit rows.",
)
@click.option(
    "--answers",
    metavar="JSON",
    help='Go on with a paused run (--resume SESSION, no PROMPT): {"CALL_ID": [{"selected": ["label"]}]}; '
    "@FILE or - (stdin) read it from there.",
)
@click.option(
    "--decisions",
    metavar="JSON",
    help='A paused run\'s approvals: {"CALL_ID": "allow_once" | "allow_always" | "deny"}; @FILE or - as --answers.',
)
@agent_options
def command(prompt: str | None, as_json: bool, max_budget: float | None, rig_root: Path, **options: Any) -> None:
    """Run the agent once on PROMPT and print its answer.

    Without a terminal, a question (ask_user) pauses the run: its state is kept under .toolrig/paused/ and
    `toolrig run --resume SESSION --answers JSON` (no PROMPT) goes on with it, once, in any process.

    Exit codes: 0 done, 1 the run failed (provider, timeout, budget), 2 bad usage or config, 3 paused for
    answers (ask_user with no terminal), 130 interrupted.
    """
    from toolrig.commands._run_impl import run_once

    run_once(prompt, as_json=as_json, max_budget=max_budget, rig_root=rig_root, **options)
