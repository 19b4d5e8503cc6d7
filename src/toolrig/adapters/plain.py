"""Provider-neutral tool descriptions: JSON Schema in and out, plus the flags programs care about."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolrig.registry import AnyTool


def json_tool(tool: AnyTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "group": tool.group,
        "input_schema": tool.input_schema(),
        "output_schema": tool.output_schema(),
        "read_only": tool.read_only,
        "destructive": tool.destructive,
        "open_world": tool.open_world,
        "terminal": tool.terminal,
    }


def json_tools(tools: Iterable[AnyTool]) -> list[dict[str, Any]]:
    return [json_tool(t) for t in tools]


_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


def summary(text: str, width: int = 80) -> str:
    """The first sentence, marked ``[+N chars]`` when the description goes on past what is shown.

    A list cut at the first sentence must not hide that more is there: the model reads all of it, and an MCP
    server's instruction appended after a harmless first sentence is what a person reviewing the list must see.
    """
    flat = " ".join(text.split())
    whole = first_sentence(text, width)
    if len(flat.rstrip(".:;, ")) <= len(whole):
        return whole
    shown = first_sentence(text, max(10, width - 14)).removesuffix("…")
    return f"{shown} [+{len(flat) - len(shown)} chars]"


def first_sentence(text: str, width: int = 80) -> str:
    """The first sentence of a description on one line, cut at a word boundary to ``width``.

    A sentence ends at a full stop followed by white space, but not after an abbreviation ("e.g.").
    """
    flat = " ".join(text.split())
    end = len(flat)
    for i, char in enumerate(flat):
        at_end = char in ".!?" and (i + 1 == len(flat) or flat[i + 1] == " ")
        if at_end and not any(flat[: i + 1].lower().endswith(a) for a in _ABBREVIATIONS):
            end = i
            break
    sentence = flat[:end].rstrip(".:;, ")
    if len(sentence) <= width:
        return sentence
    cut = sentence[: width - 1]
    if sentence[width - 1] != " ":  # mid-word: drop the partial word
        cut = cut.rsplit(" ", 1)[0]
    cut = cut.rstrip(".:;,( ")
    return cut + "…"
