"""BM25 over a tool catalog: names, descriptions and parameter descriptions, for tool_search.

A catalog is at most a few thousand tools, so an in-memory index rebuilt when the catalog changes is
cheaper and simpler than a database: no file, no migration, no staleness.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
K1 = 1.2
B = 0.75
NAME_WEIGHT = 3  # a word in the tool's name counts as much as three in its description


def words(text: str) -> list[str]:
    """Lowercase words; ``get_sum``, ``get-sum`` and ``getSum`` all give ``get`` and ``sum``."""
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


def parameter_text(schema: dict[str, Any], depth: int = 0) -> list[str]:
    """Every property's name and description in a JSON Schema, nested objects included (bounded)."""
    if depth > 4 or not isinstance(schema, dict):
        return []
    texts: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            texts.append(str(name))
            if isinstance(sub, dict):
                if isinstance(sub.get("description"), str):
                    texts.append(sub["description"])
                texts += parameter_text(sub, depth + 1)
    for key in ("items", "$defs", "definitions"):
        nested = schema.get(key)
        if isinstance(nested, dict):
            values = nested.values() if key != "items" else [nested]
            for sub in values:
                texts += parameter_text(sub, depth + 1) if isinstance(sub, dict) else []
    return texts


@dataclass(frozen=True, slots=True)
class Hit:
    tool: Any
    score: float


class ToolIndex:
    def __init__(self, tools: Iterable[Any]) -> None:
        self.tools = list(tools)
        self._docs: list[Counter[str]] = []
        for tool in self.tools:
            names = words(tool.name) + words(tool.display_name or "") + words(getattr(tool, "group", ""))
            try:
                schema = tool.input_schema()
            except Exception:
                schema = {}
            body = words(tool.description) + [w for t in parameter_text(schema) for w in words(t)]
            self._docs.append(Counter(names * NAME_WEIGHT + body))
        self._lengths = [sum(doc.values()) for doc in self._docs]
        self._average = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        self._df: Counter[str] = Counter(term for doc in self._docs for term in doc)

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        terms = list(dict.fromkeys(words(query)))
        if not terms:
            return []
        total = len(self._docs)
        scored: list[Hit] = []
        for tool, doc, length in zip(self.tools, self._docs, self._lengths, strict=True):
            score = 0.0
            for term in terms:
                freq = doc.get(term, 0)
                if not freq:
                    continue
                df = self._df[term]
                idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
                norm = K1 * (1 - B + B * length / (self._average or 1.0))
                score += idf * freq * (K1 + 1) / (freq + norm)
            if score > 0:
                scored.append(Hit(tool, score))
        scored.sort(key=lambda hit: (-hit.score, hit.tool.name))
        return scored[:limit]


def find(tools: Sequence[Any], name: str) -> Any | None:
    """The tool called ``name`` or displayed as ``name`` (``server/tool``)."""
    for tool in tools:
        if name in (tool.name, tool.display_name) or name in getattr(tool, "aliases", ()):
            return tool
    return None
