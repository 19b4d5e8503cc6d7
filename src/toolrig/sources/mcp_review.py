"""What ``toolrig mcp trust`` shows before it asks: each changed tool definition as a diff, field by field.

Trust model: the definitions come from the MCP server and are hostile (an injected instruction in a
description is the attack this review exists for). They are shown whole, as text: control characters are
made visible so a definition cannot redraw the terminal or hide a line from the person reading it.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from toolrig.sources.mcp_trust import TrustDiff

# Every field of a definition that the model reads or that decides how its calls are approved.
SHOWN = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def visible(text: str) -> str:
    """``text`` with escapes, zero-width and direction characters written as escapes (newlines kept)."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def render(definition: dict[str, Any]) -> list[str]:
    """A definition as lines a person can read and a diff can compare: text as text, schemas as JSON."""
    lines: list[str] = []
    for key in SHOWN:
        value = definition.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            text = visible(value).split("\n")
            lines.append(f"{key}: {text[0]}")
            lines.extend(f"  {line}" for line in text[1:])
        else:
            dumped = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
            lines.append(f"{key}:")
            lines.extend(f"  {visible(line)}" for line in dumped.split("\n"))
    return lines


def review(diff: TrustDiff, trusted: dict[str, dict[str, Any]], live: list[dict[str, Any]]) -> str:
    """The text shown before asking: a unified diff per changed tool, new tools whole, gone tools by name."""
    by_name = {d["name"]: d for d in live}
    out: list[str] = []
    for name in diff.changed:
        old = trusted.get(name, {}).get("definition")
        before = render(old) if isinstance(old, dict) else []
        out.append(f"~ {visible(name)}  (changed since it was trusted)")
        out.extend(
            "    " + line.rstrip("\n")
            for line in difflib.unified_diff(before, render(by_name[name]), "trusted", "now", n=2, lineterm="")
        )
    for name in diff.added:
        out.append(f"+ {visible(name)}  (new)")
        out.extend(f"    + {line}" for line in render(by_name[name]))
    for name in diff.removed:
        out.append(f"- {visible(name)}  (gone)")
    return "\n".join(out)
