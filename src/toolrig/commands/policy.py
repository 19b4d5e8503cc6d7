"""``toolrig policy explain``: which rule decides a call, and how the policy got there, without running it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolrig.cli import profile_option, root_option

if TYPE_CHECKING:
    from toolrig.profiles import Profile

EXIT_USAGE = 2


@click.group()
def command() -> None:
    """Inspect the tool policy (rules, approvals, rate limits, hooks)."""


@command.command("explain")
@click.argument("tool")
@click.option("--json", "json_args", default="{}", metavar="JSON", help="The call's arguments, as one JSON object.")
@click.option("--agent", metavar="NAME", default=None, help="Explain the call as this agent would make it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@root_option()
@profile_option()
def explain(tool: str, json_args: str, agent: str | None, fmt: str, rig_root: Path, profile: str | None) -> None:
    """Say whether TOOL called with these arguments would be allowed, asked about or denied, and by which rule.

    TOOL may be a profile's name (Bash, Write, run_terminal_command...): the arguments are read in that
    profile's shape, as the call would be. Nothing runs and no rate-limit token is spent.
    """
    from toolrig.cli import make_rig

    try:
        args = json.loads(json_args)
    except json.JSONDecodeError as exc:
        _fail(f"--json is not valid JSON: {exc.msg}")
    if not isinstance(args, dict):
        _fail("--json must be a JSON object")
    rig = make_rig(rig_root, agent=agent)
    report = _explain(rig, tool, args, agent, _profile_naming(rig, tool, profile))
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print(report)


def _fail(message: str) -> Any:
    click.echo(f"toolrig: error: {message}", err=True)
    raise SystemExit(EXIT_USAGE)


def _profile_naming(rig: Any, name: str, chosen: str | None) -> Profile:
    """The profile ``name`` is read under, as a model of that profile would have called it.

    ``--profile``, else the rig's own if it has the name, else toolrig's for a tool of that name, else the
    first built-in profile that has it (Bash: claude).
    """
    from toolrig.profiles import NAMES, get_profile

    if chosen is not None:
        return get_profile(chosen)
    own: Profile = rig.profile
    if own.face(name) is not None or rig.catalog.find(name) is not None:
        return own
    for candidate in NAMES:
        if get_profile(candidate).face(name) is not None:
            return get_profile(candidate)
    return own


def _explain(rig: Any, name: str, args: dict[str, Any], agent: str | None, profile: Profile) -> dict[str, Any]:
    """Stages 1 and 2 of the one call path, for real (``Rig.decide``), reported with where they came from."""
    import anyio

    from toolrig.policy.ratelimit import describe
    from toolrig.policy.subjects import kind_of, view

    face = profile.face(name)
    report: dict[str, Any] = {"tool": name, "agent": agent, "arguments": args}
    if face is not None and face.name != face.tool:
        report.update(profile=profile.name, canonical_tool=face.tool)
    if rig.catalog.find(face.tool if face is not None else name) is None:
        _fail(f"no tool named {name!r} (see `toolrig tools list`, or name a profile with --profile)")
    call, refused = anyio.run(lambda: rig.decide(name, args, profile=profile))
    if call.input is not None and face is not None and face.name != face.tool:
        report["translated_arguments"] = call.input.model_dump(mode="json", exclude_none=True)
    if refused is not None and not call.verdict:
        _fail(refused.message or "the arguments are not valid")  # invalid arguments: nothing was decided
    tool = call.tool
    governance = rig.governance
    decision = None
    if tool is not None and call.input is not None:  # the policy's own trace of how it read the rules
        decision = governance.policy.decide(tool, agent, call.subjects, call.input, explain=True)
    keys = decision.keys if decision is not None and decision.rule == call.decided_by else ()
    plain_key = "[" not in call.decided_by and " " not in call.decided_by
    keys = keys or (tuple(call.decided_by.split(".")) if plain_key and call.decided_by else ())
    file, line = rig.loaded.where(*keys) if keys else (None, None)
    seen = view(kind_of(tool), call.subjects, rig.workspace) if tool is not None and call.subjects else None
    limits = governance.limiter.limits_for(tool, agent) if governance.limiter and tool is not None else []
    hooks = [path.name for hook in rig.hooks for path in getattr(hook, "scripts", {}).get("before_tool", [])]
    approvals = rig.config.approvals
    report.update(
        verdict=call.verdict,
        rule=call.decided_by,
        file=str(file) if file else None,
        line=line,
        reason=call.verdict_reason or (refused.message if refused is not None else ""),
        subject_kind=seen.kind if seen else None,
        subjects=call.subjects,
        units=list(seen.units) if seen else [],
        not_plain=list(seen.unclear) if seen else [],
        trace=list(decision.trace) if decision is not None else [],
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
    face = f" = {report['canonical_tool']} (profile {report['profile']})" if report.get("canonical_tool") else ""
    click.echo(f"tool: {report['tool']}{face}{who}")
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
