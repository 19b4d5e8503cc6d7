"""``toolrig sandbox check``: what confines run_command on this machine, and why the other mechanisms do not."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolrig.cli import root_option


@click.group()
def command() -> None:
    """The sandbox run_command's commands run in."""


@command.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as one JSON object.")
@root_option()
def check(as_json: bool, rig_root: Path) -> None:
    """Say which mechanism confines commands here (bubblewrap, Landlock or none), and what the others lack.

    Exits 0 when a mechanism holds, 1 when commands would run unconfined (and 2 when the workspace asks for
    ``sandbox: required``, so every command would be refused).
    """
    from toolrig.config import load_config
    from toolrig.sandbox.confine.choose import choose
    from toolrig.tools.shell import RunCommandConfig

    loaded = load_config(rig_root)
    raw = loaded.config.tool_config.get("run_command")
    settings = RunCommandConfig.model_validate(raw or {})
    mode = settings.sandbox
    findings = {}
    for name in ("bwrap", "landlock"):
        picked = choose("auto", force=name)
        findings[name] = "holds: " + picked.backend.holds() if picked.backend.name == name else picked.tried[0]
    chosen = choose("auto" if mode == "required" else mode)
    network = (
        f"{settings.network} (egress proxy per command, fetch_url's guard)"
        if chosen.backend.name == "bwrap" and settings.network == "guarded"
        else "none (loopback only)"
        if chosen.backend.name == "bwrap"
        else "not confined (needs bwrap's network namespace)"
    )
    report = {
        "mode": mode,
        "chosen": chosen.backend.name,
        "holds": chosen.backend.holds(),
        "network": network,
        "backends": findings,
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(f"tool_config.run_command.sandbox: {mode}")
        for name, finding in findings.items():
            click.echo(f"  {name:9} {finding}")
        click.echo(f"commands run under: {chosen.backend.name} ({chosen.backend.holds()})")
        click.echo(f"network: {network}")
    if chosen.backend.name == "none" and mode != "off":
        raise SystemExit(2 if mode == "required" else 1)
