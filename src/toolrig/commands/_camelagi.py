"""CamelAGI's ``~/.camelagi/config.yaml`` and hooks directory, converted into toolrig's.

Trust model: the CamelAGI file is the user's own and is read as data (``yaml.safe_load``); nothing in it
runs at import. Hook scripts are copied as they are and run later through toolrig's hook gate, like any
hook in ``~/.toolrig/hooks``. A literal API key is not copied unless asked: the config names the variable.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from toolrig.profiles import get_profile

HOOK_POINTS = ("before_prompt", "after_response", "before_tool", "after_tool")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
_KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
_NOT_CONVERTED = {
    "serve": "the gateway server: use `toolrig mcp serve --transport http`",
    "compaction": "toolrig has no context compaction setting",
    "skills": "toolrig finds skills in .toolrig/skills and skills.paths",
    "retry": "llm.max_retries is the nearest setting; set it by hand",
    "voice": "no voice transcription in toolrig",
    "lanes": "concurrency lanes have no equivalent (workers: runs background tasks)",
    "boot": "no boot script in toolrig",
    "cursorApiKey": "no Cursor provider in toolrig",
}


@dataclass
class Converted:
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    hooks: list[tuple[Path, str]] = field(default_factory=list)  # (CamelAGI script, toolrig hook file name)


def convert(data: dict[str, Any], *, copy_key: bool = False) -> Converted:
    """CamelAGI settings as toolrig settings, with a note for everything not (or not exactly) carried over."""
    out = Converted()
    llm: dict[str, Any] = {}
    provider = data.get("provider")
    if provider in ("anthropic", "openai"):
        llm["provider"] = provider
    for source, target in (("model", "model"), ("baseUrl", "base_url"), ("maxTurns", "max_turns")):
        if data.get(source) is not None:
            llm[target] = data[source]
    if data.get("maxBudgetUsd") is not None:
        llm["max_budget_usd"] = data["maxBudgetUsd"]
    if data.get("effort") in ("low", "medium", "high", "max"):
        llm["effort"] = data["effort"]
    thinking = data.get("thinking")
    if thinking is not None:
        llm["thinking"] = "off" if str(thinking) in ("off", "False", "false") else "adaptive"
        if str(thinking) in ("low", "medium", "high"):
            out.notes.append(f"thinking: {thinking} became 'adaptive' (the model chooses its own budget)")
    _api_key(data, llm, out, copy_key=copy_key)
    seconds = data.get("timeoutSeconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        llm["run_timeout_seconds"] = seconds
    elif seconds is not None:
        out.notes.append(f"timeoutSeconds ({seconds!r}) is not a positive number of seconds: not converted")
    llm["tool_profile"] = "camelagi"  # the model keeps the tool names and shapes it had
    out.config["llm"] = llm
    tools = data.get("tools") or {}
    if isinstance(tools, dict) and (tools.get("allow") or tools.get("deny")):
        out.config["tools"] = {k: list(tools[k]) for k in ("allow", "deny") if tools.get(k)}
    _approvals(data.get("approvals") or {}, out)
    hooks = data.get("hooks") or {}
    if isinstance(hooks, dict) and "enabled" in hooks:
        out.config["hooks"] = {"enabled": bool(hooks["enabled"])}
    _cron(data.get("cron") or [], out)
    _telegram(data.get("telegram"), out)
    if data.get("agents"):
        out.notes.append(
            "agents: CamelAGI's named agents (model, Telegram bot) are not converted; define agents: by hand"
        )
    for key, why in _NOT_CONVERTED.items():
        if data.get(key) not in (None, {}, [], False):
            out.notes.append(f"{key}: not converted ({why})")
    return out


def _api_key(data: dict[str, Any], llm: dict[str, Any], out: Converted, *, copy_key: bool) -> None:
    provider = str(data.get("provider") or "anthropic")
    key = data.get("apiKey")
    variable = _KEY_VARIABLES.get(provider, "ANTHROPIC_API_KEY")
    if not isinstance(key, str) or not key.strip():
        llm["api_key_env"] = variable
        return
    text = key.strip()
    if text.startswith("${") and text.endswith("}"):
        llm["api_key_env"] = text[2:-1]
    elif copy_key:
        llm["api_key"] = text
        out.notes.append("apiKey was copied into llm.api_key: keep the file private (mode 0600)")
    else:
        llm["api_key_env"] = variable
        out.notes.append(f"apiKey was not copied: export {variable}=... (or import again with --copy-key)")


def _approvals(approvals: dict[str, Any], out: Converted) -> None:
    converted: dict[str, Any] = {}
    if approvals.get("mode") in ("off", "smart", "always"):
        converted["mode"] = approvals["mode"]
    if approvals.get("allowlist"):
        # Kept as written: policy reads "Bash:git *" and "Edit:/src/*" with CamelAGI's meaning.
        converted["allow"] = [str(p) for p in approvals["allowlist"]]
    if approvals.get("timeoutSeconds") is not None:
        converted["timeout_seconds"] = approvals["timeoutSeconds"]
    if approvals.get("fallback") in ("deny", "allow"):
        converted["fallback"] = approvals["fallback"]
    if approvals.get("forwardTo") is not None:
        out.notes.append(
            f"CamelAGI's forwardTo ({approvals['forwardTo']}) under approvals: forward approvals to that Telegram "
            "chat with toolrig's remote approvals, set by hand (docs/policy.md)"
        )
    if converted:
        out.config["approvals"] = converted


def _telegram(telegram: Any, out: Converted) -> None:
    """CamelAGI's bot as ``channels.telegram`` (served by ``toolrig serve``); the token stays in the environment."""
    if not isinstance(telegram, dict) or not (telegram.get("botToken") or telegram.get("allowedUsers")):
        return
    token = telegram.get("botToken")
    variable = "TELEGRAM_BOT_TOKEN"  # CamelAGI reads it too
    if isinstance(token, str) and token.startswith("${") and token.endswith("}") and len(token) > 3:
        variable = token[2:-1]
    elif token:
        out.notes.append(f"telegram.botToken is not copied: set {variable} in the environment of `toolrig serve`")
    users = [u for u in telegram.get("allowedUsers") or () if isinstance(u, int) and not isinstance(u, bool) and u > 0]
    if not users:
        out.notes.append(
            "telegram: no allowedUsers, and toolrig's bot answers only listed users: set "
            "channels.telegram.allowed_users by hand"
        )
        return
    out.config["channels"] = {"telegram": {"bot_token_env": variable, "allowed_users": users}}
    out.notes.append("telegram: the bot runs inside `toolrig serve` (docs/gateway.md), in private chats only")
    if isinstance(telegram.get("groups"), dict) or telegram.get("chats"):
        out.notes.append(
            "telegram.groups / telegram.chats: not converted (toolrig answers each allowed user in their own chat; "
            "per-chat models and prompts: an agent under agents: named in channels.telegram.agent)"
        )


def _cron(jobs: Any, out: Converted) -> None:
    converted = []
    for job in jobs if isinstance(jobs, list) else []:
        if not isinstance(job, dict) or not job.get("schedule") or not job.get("prompt"):
            continue
        entry = {
            "name": str(job.get("name") or job.get("id") or "job"),
            "schedule": str(job["schedule"]),
            "prompt": str(job["prompt"]),
        }
        if job.get("enabled") is False:
            entry["enabled"] = False  # type: ignore[assignment]
        converted.append(entry)
        if job.get("session"):
            out.notes.append(f"cron job {entry['name']!r}: its session ({job['session']}) is not kept")
    if converted:
        out.config["cron"] = converted


# ------------------------------------------------------------------------------------------ hooks


def find_hooks(directory: Path, out: Converted) -> None:
    """CamelAGI's ``{point}.{name}.sh|js`` scripts, each to be wrapped as ``{point}.camelagi-{name}.sh``."""
    if not directory.is_dir():
        return
    for script in sorted(directory.iterdir()):
        parts = script.name.split(".")
        if not script.is_file() or len(parts) < 3 or parts[-1] not in ("sh", "js") or parts[0] not in HOOK_POINTS:
            continue
        if not _SAFE_NAME.match(script.name):
            # The name is written into a shell script: only plain names are, so none can smuggle shell into it.
            out.notes.append(
                f"hook {script.name!r}: its name has characters other than letters, digits, . _ -; skipped"
            )
            continue
        name = "-".join(parts[1:-1])
        out.hooks.append((script, f"{parts[0]}.camelagi-{name}.sh"))
    if any(s.suffix == ".js" for s, _ in out.hooks) and shutil.which("node") is None:
        out.notes.append(
            "warning: node is not installed, so the .js hooks will not run (each logs a warning when it would "
            "have): install Node.js 18 or later"
        )


def wrapper(script: Path, copied: Path) -> str:
    """A toolrig hook that runs a CamelAGI script with CamelAGI's variables and tool names, never blocking.

    CamelAGI hooks read ``CAMELAGI_HOOK_*``, see tool names such as ``Write`` and ``Bash``, and cannot block a
    call (their failures are only logged); the wrapper keeps all three. A failure (or node missing for a
    .js hook) exits 1, which toolrig logs as a warning with the script's stderr and does not block on.
    """
    faces = get_profile("camelagi").faces
    names = "\n".join(f"  {face.tool}) tool={shlex.quote(face.name)} ;;" for face in faces if face.name != face.tool)
    label = shlex.quote(script.name)
    if script.suffix == ".js":
        run = (
            "command -v node >/dev/null 2>&1 || "
            f'{{ echo "toolrig: the CamelAGI hook "{label}" needs node, which is not installed" >&2; exit 1; }}\n'
            f"node {shlex.quote(str(copied))}"
        )
    else:
        run = f"bash {shlex.quote(str(copied))}"
    return f"""#!/usr/bin/env bash
# Converted from CamelAGI's {script.name} by `toolrig config import camelagi`.
tool="$TOOLRIG_HOOK_TOOL"
case "$tool" in
{names}
esac
export CAMELAGI_HOOK_POINT="$TOOLRIG_HOOK_POINT"
[ -n "$TOOLRIG_HOOK_SESSION" ] && export CAMELAGI_HOOK_SESSION="$TOOLRIG_HOOK_SESSION"
[ -n "$TOOLRIG_HOOK_MESSAGE" ] && export CAMELAGI_HOOK_MESSAGE="$TOOLRIG_HOOK_MESSAGE"
[ -n "$TOOLRIG_HOOK_RESPONSE" ] && export CAMELAGI_HOOK_RESPONSE="${{TOOLRIG_HOOK_RESPONSE:0:10000}}"
[ -n "$tool" ] && export CAMELAGI_HOOK_TOOL="$tool"
[ -n "$TOOLRIG_HOOK_TOOL_ARGS" ] && export CAMELAGI_HOOK_TOOL_ARGS="$TOOLRIG_HOOK_TOOL_ARGS"
[ -n "$TOOLRIG_HOOK_TOOL_RESULT" ] && export CAMELAGI_HOOK_TOOL_RESULT="${{TOOLRIG_HOOK_TOOL_RESULT:0:10000}}"
{run}
status=$?
# Exit 1 (never 2, which blocks a call in toolrig): toolrig logs the failure with this script's stderr.
[ "$status" -eq 0 ] || {{ echo "toolrig: the CamelAGI hook "{label}" failed (exit $status)" >&2; exit 1; }}
exit 0
"""


def install_hooks(out: Converted, target: Path) -> list[Path]:
    """Copy the scripts under ``target/camelagi/`` and write one wrapper per script into ``target``."""
    written: list[Path] = []
    if not out.hooks:
        return written
    originals = target / "camelagi"
    originals.mkdir(parents=True, exist_ok=True)
    for script, name in out.hooks:
        copied = originals / script.name
        shutil.copyfile(script, copied)
        hook = target / name
        hook.write_text(wrapper(script, copied), encoding="utf-8")
        hook.chmod(0o755)
        written.append(hook)
    return written


def load(path: Path) -> tuple[dict[str, Any], Path]:
    """The CamelAGI config (``path`` is the file or its directory) and its hooks directory."""
    file = path / "config.yaml" if path.is_dir() else path
    data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{file}: not a CamelAGI config (the top level is not a mapping)")
    return data, file.parent / "hooks"


def dump(config: dict[str, Any]) -> str:
    header = "# Converted from CamelAGI by `toolrig config import camelagi`.\n"
    return header + yaml.safe_dump(json.loads(json.dumps(config)), sort_keys=False, allow_unicode=True)
