"""What the agent loop adds for skills and capabilities: prompt sections and the model-written grouping.

The seam in the loop is two calls (``prompt_sections`` when the system prompt is built, ``run_catalog``
when the provider is known); everything else lives in ``toolrig.skills``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from toolrig.agent.messages import Message
from toolrig.agent.providers import Provider, TurnComplete, TurnRequest
from toolrig.catalog import capabilities, verdicts
from toolrig.catalog.binding import RigCatalog, skills_of
from toolrig.catalog.capabilities import Theme
from toolrig.profiles import Profile

if TYPE_CHECKING:
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.agent")

GROUPING_PROMPT = (
    "You group an AI agent's tools into a few themes for its instructions. Reply with JSON only: "
    '{"themes": [{"title": "2-3 words", "summary": "what the tools let the agent do, under 15 words", '
    '"tools": ["tool names"]}]}. Put every tool in exactly one theme; use the names exactly as given.'
)
MAX_CATALOG_SKILLS = 100


def prompt_sections(rig: Rig) -> str:
    """The skills catalog and the capabilities summary, appended to every system prompt."""
    parts: list[str] = []
    if rig.registry.find("load_skill") is not None:
        found = skills_of(rig)
        if len(found):
            lines = [
                "# Skills",
                "Specialised instructions you can load with load_skill(name) when a task matches:",
                *(
                    f"- {s.name}: {s.description} ({s.location})"
                    for s in list(found.skills.values())[:MAX_CATALOG_SKILLS]
                ),
            ]
            parts.append("\n".join(lines))
    parts.append(capabilities.current(rig, rig.agent))
    return "\n\n" + "\n\n".join(parts)


def run_catalog(rig: Rig, provider: Provider, profile: Profile | None = None) -> Any:
    """The catalog a run's tools see: under its profile's names; its model may phrase the themes."""
    catalog = rig.executor.catalog
    if not isinstance(catalog, RigCatalog):
        return catalog

    async def group(themes: list[Theme]) -> list[Theme] | None:
        return await model_themes(rig, provider, themes)

    return catalog.for_caller(grouper=group, profile=profile)


async def model_themes(rig: Rig, provider: Provider, themes: list[Theme]) -> list[Theme] | None:
    """One model call: the tools (names, descriptions, verdicts) in, themes out; None when unusable."""
    tools = {t.name: t for t in verdicts.offered(rig, rig.agent)}
    listing = [
        {
            "theme_now": theme.title,
            "tools": [
                {"name": name, "description": tools[name].description.split("\n", 1)[0][:200]}
                for name in theme.tools
                if name in tools
            ]
            + [{"name": name} for name in theme.tools if name not in tools],
            "policy": theme.policy,
        }
        for theme in themes
    ]
    request = TurnRequest(
        system=GROUPING_PROMPT, messages=[Message.user(json.dumps(listing, ensure_ascii=False))], tools=[]
    )
    text = ""
    async for item in provider.stream(request):
        if isinstance(item, TurnComplete):
            text = item.message.text
    data = _json_object(text)
    regrouped = capabilities.regroup(rig, rig.agent, data.get("themes") if data else None)
    if regrouped is None:
        log.warning("capabilities: the model's grouping did not cover every tool once; grouping by tool group")
    return regrouped


def _json_object(text: str) -> dict[str, object] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
