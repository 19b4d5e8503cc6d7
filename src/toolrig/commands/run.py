"""``toolrig run "prompt"``: one non-interactive agent run; ``--json`` streams its events as JSON lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolrig.commands._agent_common import agent_options


@click.command("run")
@click.argument("prompt")
@click.option("--json", "as_json", is_flag=True, help="Stream every event as one JSON line (for scripts).")
@click.option("--max-budget", "max_budget", type=float, help="Stop the run when it has cost more than this (USD).")
@agent_options
def command(prompt: str, as_json: bool, max_budget: float | None, rig_root: Path, **options: Any) -> None:
    """Run the agent once on PROMPT and print its answer.

    Exit codes: 0 done, 1 the run failed (provider, timeout, budget), 2 bad usage or config, 130 interrupted.
    """
    from toolrig.commands._run_impl import run_once

    run_once(prompt, as_json=as_json, max_budget=max_budget, rig_root=rig_root, **options)
