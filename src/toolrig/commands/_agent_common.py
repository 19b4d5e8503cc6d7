"""What ``toolrig run`` and ``toolrig chat`` share: options, provider checks, plain-text rendering."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from toolrig.cli import root_option

if TYPE_CHECKING:
    from toolrig.agent.providers import ProviderSettings
    from toolrig.rig import Rig

EXIT_RUN_FAILED = 1
EXIT_CONFIG = 2
EXIT_PAUSED = 3  # the run waits for a person's answers (ask_user without a terminal)
EXIT_ABORTED = 130


def agent_options(command: Any) -> Any:
    """The options both commands take."""
    for option in reversed(
        [
            click.option(
                "--model", "-m", help="The model (claude-* goes to Anthropic; anything else OpenAI-compatible)."
            ),
            click.option(
                "--resume", "resume", metavar="ID", help="Continue the session ID (see `toolrig sessions list`)."
            ),
            click.option("--continue", "continue_latest", is_flag=True, help="Continue the most recent session."),
            click.option("--max-turns", type=click.IntRange(min=1), help="Model turns before a summary is asked for."),
            click.option("--thinking", type=click.Choice(["adaptive", "off"]), help="Extended thinking (Anthropic)."),
            click.option("--effort", type=click.Choice(["low", "medium", "high", "max"]), help="Reasoning effort."),
            click.option(
                "--agent", "agent", metavar="NAME", help="Run as this agent (`agents:` or `toolrig agents list`)."
            ),
            root_option(),
        ]
    ):
        command = option(command)
    return command


def fail(message: str, code: int = EXIT_CONFIG, kind: str = "config") -> NoReturn:
    from toolrig.cli import report_error

    report_error(message, kind)
    sys.exit(code)


def check_provider(rig: Rig, model: str | None) -> ProviderSettings:
    """Resolve the provider now, so a missing model or key is one clear message before anything runs."""
    from toolrig.agent.errors import RunError
    from toolrig.agent.providers import settings_from

    try:
        return settings_from(rig.config.llm, model=model)
    except RunError as exc:
        fail(exc.message)


def short_args(args: dict[str, Any], limit: int = 80) -> str:
    import json

    text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"
