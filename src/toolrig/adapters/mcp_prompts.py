"""A skill served as an MCP prompt: its declared arguments, the tool outputs it embeds, its body filled in.

The arguments come from the skill's front matter (``arguments``, or ``argument-hint`` as one free-text
argument); ``$ARGUMENTS`` and ``${name}`` in the body take the client's values, nothing else is expanded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from toolrig.content import AudioPart, ContentPart, ImagePart, ResourcePart


@dataclass(frozen=True, slots=True)
class Argument:
    name: str
    description: str | None = None
    required: bool = False
    values: tuple[str, ...] = ()


_ARG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def prompt_arguments(extra: dict[str, Any], body: str) -> list[Argument]:
    """A skill's declared arguments (front matter ``arguments``); a body using ``$ARGUMENTS`` takes one."""
    declared = extra.get("arguments")
    found: list[Argument] = []
    if isinstance(declared, list):
        for item in declared[:32]:
            if isinstance(item, str) and _ARG_NAME.match(item):
                found.append(Argument(item))
            elif isinstance(item, dict) and isinstance(item.get("name"), str) and _ARG_NAME.match(item["name"]):
                values = item.get("values")
                found.append(
                    Argument(
                        item["name"],
                        str(item["description"]) if item.get("description") is not None else None,
                        bool(item.get("required", False)),
                        tuple(str(v) for v in values[:200]) if isinstance(values, list) else (),
                    )
                )
    if not found and "$ARGUMENTS" in body:
        hint = extra.get("argument-hint")
        found.append(Argument("arguments", str(hint) if hint is not None else "What the skill should work on."))
    return found


def prompt_embeds(extra: dict[str, Any]) -> list[str]:
    """The files a skill's front matter lists under ``embed`` (paths inside its own folder), in order.

    Malformed entries are ignored; whether a path stays inside the folder is ``read_skill_resource``'s
    check, made at the read, where the walk that enforces it is.
    """
    declared = extra.get("embed")
    if isinstance(declared, str):
        declared = [declared]
    if not isinstance(declared, list):
        return []
    return [item for item in declared if isinstance(item, str) and 0 < len(item) <= 1000]


def part_size(part: ContentPart) -> int:
    if isinstance(part, ImagePart | AudioPart):
        return part.size
    if isinstance(part, ResourcePart):
        return len((part.text or part.blob or "").encode())
    return len(part.text.encode())


def fill(body: str, arguments: list[Argument], given: dict[str, str]) -> str:
    """The body with ``${name}`` and ``$ARGUMENTS`` replaced; one pass, so a value is never expanded again."""
    known = {a.name for a in arguments}
    everything = " ".join(given[a.name] for a in arguments if given.get(a.name))

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return everything
        return given.get(name, "") if name in known else match.group(0)

    return re.sub(r"\$ARGUMENTS|\$\{([A-Za-z_][A-Za-z0-9_-]*)\}", substitute, body)
