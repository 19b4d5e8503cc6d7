"""The capabilities summary: one line per theme of what the agent may do here, and what policy says of it.

Peers tell a model which tools exist; this also tells it which need approval, which are rate-limited and
which paths, commands or domains are off limits, read from the verdicts of the config in force (through
``catalog.verdicts``), so the summary cannot drift from the gate. Without a model the grouping is by tool
group; with one, the model may phrase the themes (``model_grouping``), but the policy facts stay ours.

Trust model: ``.toolrig/capabilities.md`` goes into every system prompt, and a repository can commit one (or a
symlink to any file). It is read without following links, and only in a trusted workspace, as skills are; an
untrusted one gets the summary computed now, without the file's front matter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from toolrig.catalog import RigParts, verdicts
from toolrig.skills import CAPABILITIES_FILE as FILE_NAME

_FRONT = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n?", re.DOTALL)

# How the built-in groups read as themes; anything else (plugins) is titled from its group name.
THEMES: dict[str, tuple[str, str]] = {
    "files": ("Files", "read and list the project's files"),
    "search": ("Search", "find files by name and text by pattern"),
    "edit": ("Editing", "create, change and preview changes to files"),
    "patch": ("Patches", "apply multi-file patches"),
    "shell": ("Shell", "run commands in the workspace"),
    "web": ("Web", "fetch pages and search the web"),
    "notify": ("Messages", "send email and webhooks"),
    "memory": ("Memory", "keep and search notes across sessions"),
    "kv": ("Key-value store", "keep small JSON values"),
    "librarian": ("XML library", "store and query XML documents"),
    "calculator": ("Arithmetic", "exact calculations"),
    "outputs": ("Large outputs", "page through results too large to show"),
    "skills": ("Skills", "load specialised instructions for a kind of task"),
    "toolsearch": ("Tool lookup", "find tools and their parameters"),
}
PATH_GROUPS = frozenset({"files", "search", "edit", "patch"})


@dataclass
class Theme:
    key: str
    title: str
    summary: str
    tools: list[str] = field(default_factory=list)
    policy: list[str] = field(default_factory=list)

    def line(self) -> str:
        facts = "; ".join(self.policy) if self.policy else "no approval needed"
        return f"- **{self.title}** ({', '.join(self.tools)}): {self.summary}. Policy: {facts}."


def themes(rig: RigParts, agent: str | None) -> list[Theme]:
    """The deterministic grouping: one theme per tool group (per server for MCP tools), sorted by key."""
    by_key: dict[str, list[verdicts.ToolStanding]] = {}
    for tool in verdicts.offered(rig, agent):
        key = tool.group
        if key == "mcp" and tool.display_name and "/" in tool.display_name:
            key = "mcp:" + tool.display_name.split("/", 1)[0]
        by_key.setdefault(key, []).append(verdicts.standing(rig, tool, agent))
    result = []
    for key in sorted(by_key):
        standings = by_key[key]
        if key.startswith("mcp:"):
            title, summary = f"MCP server {key[4:]}", f"tools of the MCP server '{key[4:]}'"
        else:
            title, summary = THEMES.get(key, (key.replace("_", " ").capitalize(), f"tools of the {key} group"))
        theme = Theme(key, title, summary, [s.tool.display_name or s.tool.name for s in standings])
        theme.policy = policy_facts(rig, key, standings)
        result.append(theme)
    return result


def policy_facts(rig: RigParts, key: str, standings: Sequence[verdicts.ToolStanding]) -> list[str]:
    facts: list[str] = []
    names = [s.tool.name for s in standings]
    asking = [s.tool.name for s in standings if s.verdict == "ask"]
    denied = [s.tool.name for s in standings if s.verdict == "deny"]
    if asking:
        facts.append("every call needs approval" if asking == names else f"needs approval: {', '.join(asking)}")
    if denied:
        facts.append(f"refused outright: {', '.join(denied)}")
    for s in standings:
        for verdict, subject in s.subject_rules:
            word = "refused" if verdict == "deny" else "asks first"
            facts.append(f"{s.tool.name} {word} for '{subject}'")
        if s.rate_limits:
            facts.append(f"{s.tool.name} rate limit {', '.join(s.rate_limits)}")
        if s.allowed_domains:
            facts.append(f"{s.tool.name} reaches only {', '.join(s.allowed_domains)}")
        if s.blocked_domains:
            facts.append(f"{s.tool.name} never reaches {', '.join(s.blocked_domains)}")
    if key in PATH_GROUPS:
        denied_paths = verdicts.denied_paths(rig)
        if denied_paths:
            facts.append(f"denied paths: {', '.join(denied_paths)}")
        if rig.workspace.read_only and key in ("edit", "patch"):
            facts.append("the workspace is read-only")
    return list(dict.fromkeys(facts))


def render(themes_: Sequence[Theme], *, agent: str | None, grouping: str, keep: dict[str, Any] | None = None) -> str:
    front = {**(keep or {}), "generated_by": "toolrig capabilities_refresh", "agent": agent, "grouping": grouping}
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=True, allow_unicode=True).strip(),
        "---",
        "# What you can do here",
        "",
        "Each line is a theme of your tools and what the policy in force says about it.",
        "",
        *(t.line() for t in themes_),
        "",
    ]
    return "\n".join(lines)


def front_matter(text: str) -> dict[str, Any]:
    match = _FRONT.match(text)
    if match is None:
        return {}
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def path_of(rig: RigParts) -> Path:
    return rig.workspace.state_dir / FILE_NAME


def _stored(rig: RigParts) -> str | None:
    """The file's text, reached with no symlink on the way; None when it is missing or refused."""
    from toolrig.errors import ToolError
    from toolrig.sandbox.statedir import StatePath

    try:
        data = StatePath.of(rig.workspace.state_dir).read_bytes(FILE_NAME)
    except (OSError, ToolError):
        return None
    return data.decode("utf-8", errors="replace")


def _trusted(rig: RigParts) -> bool:
    from toolrig.config import is_trusted

    return is_trusted(rig.workspace.root)


def summary(
    rig: RigParts, agent: str | None, regrouped: list[Theme] | None = None, *, keep_front: bool = True
) -> tuple[str, str]:
    """(markdown, grouping): the summary for ``agent``; ``regrouped`` are a model's themes, when it wrote some.

    ``keep_front`` carries the current file's own front matter over (a person's notes survive a refresh).
    """
    found, grouping = (regrouped, "by the configured model") if regrouped else (themes(rig, agent), "by tool group")
    stored = _stored(rig) if keep_front else None
    keep = front_matter(stored) if stored is not None else {}
    for ours in ("generated_by", "agent", "grouping"):
        keep.pop(ours, None)
    return render(found, agent=agent, grouping=grouping, keep=keep), grouping


def refresh(rig: RigParts, agent: str | None, regrouped: list[Theme] | None = None) -> tuple[str, str]:
    """Write ``.toolrig/capabilities.md`` atomically (never through a link); returns the text and the grouping.

    The text is returned rather than read back: the file could be swapped for a link between the two.
    """
    from toolrig.sandbox.statedir import StatePath

    text, grouping = summary(rig, agent, regrouped)
    StatePath.of(rig.workspace.state_dir).write_bytes(FILE_NAME, data=text.encode("utf-8"))
    return text, grouping


def current(rig: RigParts, agent: str | None) -> str:
    """What goes into a system prompt: the file when one was written in a trusted workspace, else computed now."""
    trusted = _trusted(rig)
    if trusted and (stored := _stored(rig)) is not None:
        return stored
    return summary(rig, agent, keep_front=trusted)[0]


def regroup(rig: RigParts, agent: str | None, groups: object) -> list[Theme] | None:
    """A model's grouping (``[{"title", "summary", "tools": [...]}]``) as themes, or None if it is unusable.

    Every offered tool must appear exactly once; the policy facts are recomputed here, never the model's.
    """
    if not isinstance(groups, list) or not groups:
        return None
    standings = {t.name: verdicts.standing(rig, t, agent) for t in verdicts.offered(rig, agent)}
    by_display = {(s.tool.display_name or name): name for name, s in standings.items()}
    seen: set[str] = set()
    result: list[Theme] = []
    for index, group in enumerate(groups):
        if not isinstance(group, dict):
            return None
        title, summary_, names = group.get("title"), group.get("summary"), group.get("tools")
        if not (isinstance(title, str) and isinstance(summary_, str) and isinstance(names, list) and names):
            return None
        members = [by_display.get(n, n) for n in names if isinstance(n, str)]
        if any(m not in standings or m in seen for m in members):
            return None
        seen.update(members)
        chosen = [standings[m] for m in members]
        tool_groups = {s.tool.group for s in chosen}
        key = next(iter(tool_groups)) if len(tool_groups) == 1 else f"theme{index}"
        theme = Theme(key, _one_line(title, 60), _one_line(summary_, 200).rstrip("."))
        theme.tools = [s.tool.display_name or s.tool.name for s in chosen]
        path_key = min(tool_groups & PATH_GROUPS, default=None)  # denied paths belong to any theme with file tools
        theme.policy = policy_facts(rig, path_key or key, chosen)
        result.append(theme)
    return result if seen == set(standings) else None


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.replace("*", "").split())
    return flat[:limit]
