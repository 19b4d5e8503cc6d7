"""``toolrig policy explain``: which rule decides a call, and how the policy got there, without running it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

EXIT_USAGE = 2


@click.group()
def command() -> None:
    """Inspect the tool policy (rules, approvals, rate limits, hooks)."""


@command.command("explain")
@click.argument("tool")
@click.option("--json", "json_args", default="{}", metavar="JSON", help="The call's arguments, as one JSON object.")
@click.option("--agent", metavar="NAME", default=None, help="Explain the call as this agent would make it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--root", "rig_root", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
def explain(tool: str, json_args: str, agent: str | None, fmt: str, rig_root: Path) -> None:
    """Say whether TOOL called with these arguments would be allowed, asked about or denied, and by which rule.

    Nothing runs and no rate-limit token is spent.
    """
    from toolrig.cli import make_rig

    try:
        args = json.loads(json_args)
    except json.JSONDecodeError as exc:
        _fail(f"--json is not valid JSON: {exc.msg}")
    if not isinstance(args, dict):
        _fail("--json must be a JSON object")
    rig = make_rig(rig_root, agent=agent)
    report = _explain(rig, tool, args, agent)
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print(report)


def _fail(message: str) -> Any:
    click.echo(f"toolrig: error: {message}", err=True)
    raise SystemExit(EXIT_USAGE)


def _explain(rig: Any, name: str, args: dict[str, Any], agent: str | None) -> dict[str, Any]:
    from pydantic import ValidationError

    from toolrig.arguments import explain_validation_error, repair_arguments
    from toolrig.policy.ratelimit import describe

    report: dict[str, Any] = {"tool": name, "agent": agent, "arguments": args}
    tool = rig.executor.registry.find(name)
    if tool is None:
        if rig.catalog.find(name) is None:
            _fail(f"no tool named {name!r} (see `toolrig tools list`)")
        file, line = rig.loaded.where("tools")
        report.update(
            verdict="deny",
            rule="tools.allow / tools.deny",
            file=str(file) if file else None,
            line=line,
            reason=f"'{name}' is not offered by this config at all (tools.allow / tools.deny)",
            trace=[],
        )
        return report
    repaired, _ = repair_arguments(tool.input_model, args)
    try:
        validated = tool.input_model.model_validate(repaired)
    except ValidationError as exc:
        _fail(explain_validation_error(tool.input_model, exc).message)
    subjects = tool.subjects(validated)
    governance = rig.governance
    decision = governance.policy.decide(tool, agent, subjects, validated, explain=True)
    plain_key = "[" not in decision.rule and " " not in decision.rule
    keys = decision.keys or (tuple(decision.rule.split(".")) if plain_key else ())
    file, line = rig.loaded.where(*keys) if keys else (None, None)
    seen = decision.subjects
    limits = governance.limiter.limits_for(tool, agent) if governance.limiter else []
    hooks = [path.name for hook in rig.hooks for path in getattr(hook, "scripts", {}).get("before_tool", [])]
    approvals = rig.config.approvals
    report.update(
        verdict=decision.verdict,
        rule=decision.rule,
        file=str(file) if file else None,
        line=line,
        reason=decision.reason,
        subject_kind=seen.kind if seen else None,
        subjects=subjects,
        units=list(seen.units) if seen else [],
        not_plain=list(seen.unclear) if seen else [],
        trace=list(decision.trace),
        approvals={
            "mode": governance.policy.mode(agent),
            "fallback": approvals.fallback,
            "timeout_seconds": approvals.timeout_seconds,
        },
        rate_limits=describe(limits),
        before_tool_hooks=hooks if rig.hooks.enabled else [],
    )
    return report


def _print(report: dict[str, Any]) -> None:
    who = f" (agent: {report['agent']})" if report.get("agent") else ""
    click.echo(f"tool: {report['tool']}{who}")
    if report.get("subjects"):
        click.echo(f"acts on ({report.get('subject_kind')}): " + "; ".join(report["subjects"]))
        if report.get("subject_kind") == "command":
            click.echo("  runs: " + " | ".join(repr(u) for u in report["units"]))
        elif report["units"] != report["subjects"]:
            click.echo("  read as: " + "; ".join(report["units"]))
        if report.get("not_plain"):
            click.echo("  not plain: " + "; ".join(report["not_plain"]))
    where = f"  ({report['file']}:{report['line']})" if report.get("file") and report.get("line") else ""
    click.echo(f"decision: {report['verdict'].upper()}")
    click.echo(f"  decided by: {report['rule']}{where}")
    click.echo(f"  reason: {report['reason']}")
    if report.get("trace"):
        click.echo("how it was reached:")
        for step in report["trace"]:
            click.echo(f"  - {step}")
    if "approvals" in report:
        a = report["approvals"]
        click.echo(f"approvals: mode {a['mode']}, fallback {a['fallback']}, timeout {a['timeout_seconds']:g}s")
        click.echo("rate limits: " + (", ".join(report["rate_limits"]) or "none"))
        click.echo("before_tool hooks: " + (", ".join(report["before_tool_hooks"]) or "none"))
