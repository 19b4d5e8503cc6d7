"""What a run is set up with before its first turn: its model, limits, system prompt, tool list and channels.

Each step reads the Rig's config, the caller's ``RunOptions`` and, for a run as a named agent (``--agent``),
that agent's profile; none of them changes the Rig. ``toolrig.agent.loop`` calls them once per run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from toolrig.agent.providers import Provider, make_provider, settings_from
from toolrig.agent.state import RunOptions
from toolrig.agent.subagents.nodes import Lineage
from toolrig.agent.usage import Price, price_for
from toolrig.approvals.channel import ApprovalChannel, QuestionsApart
from toolrig.approvals.paused import PauseChannel
from toolrig.config import AgentConfig
from toolrig.permissions import AgentView
from toolrig.registry import AnyTool
from toolrig.rig import Rig

log = logging.getLogger("toolrig.agent")

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent working in the directory {root} with the tools provided. Use them to find out and "
    "to act rather than guessing; read a tool's error and fix the call. Answer concisely when done."
)


def own_agent(rig: Rig, lineage: Lineage | None) -> AgentConfig | None:
    """The named agent a root run runs as (``--agent``): its prompt, model and budgets stand in for llm's.

    A child's come from its hub instead (its type), so a child has none here.
    """
    return rig.config.agents.get(rig.agent) if rig.agent is not None and lineage is None else None


def run_provider(rig: Rig, options: RunOptions, own: AgentConfig | None) -> Provider:
    """The model the run talks to: the caller's provider, else one made from llm (and the agent's model)."""
    if options.provider is not None:
        return options.provider
    model = options.model or (own.model if own is not None and own.model != "inherit" else None)
    updates: dict[str, Any] = {}
    if options.thinking is not None:
        updates["thinking"] = options.thinking
    if options.effort is not None:
        updates["effort"] = options.effort
    config = rig.config.llm.model_copy(update=updates) if updates else rig.config.llm
    return make_provider(settings_from(config, model=model))


@dataclass(frozen=True, slots=True)
class Limits:
    """How far a run may go: turns, seconds, dollars, and the price that turns tokens into dollars."""

    max_turns: int
    timeout: float | None
    budget: float | None
    price: Price | None


def run_limits(rig: Rig, options: RunOptions, own: AgentConfig | None, lineage: Lineage | None, model: str) -> Limits:
    """The caller's limits, else the agent's, else llm's; a child's time and spending are held by its root."""
    agent = rig.config.llm
    max_turns = options.max_turns or (own.max_turns if own else None) or agent.max_turns
    # seeds (issue 38): llm.run_timeout_seconds bounds a root run that was given no timeout of its own.
    timeout = options.timeout
    if timeout is None and lineage is None:
        timeout = agent.run_timeout_seconds
    budget = options.max_budget_usd
    if budget is None and lineage is None:  # a child's spending is held by its root's ledger too
        budget = own.max_budget_usd if own and own.max_budget_usd is not None else agent.max_budget_usd
    configured = agent.price
    price = price_for(
        model,
        Price(configured.input, configured.output, configured.cache_read, configured.cache_write)
        if configured
        else None,
    )
    if budget is not None and price is None:
        log.warning("no price is known for %s: max_budget_usd cannot be enforced", model)
    return Limits(max_turns, timeout, budget, price)


def system_prompt(rig: Rig, options: RunOptions, own: AgentConfig | None, lineage: Lineage | None) -> str:
    """The caller's prompt as given, else the agent's or llm's with the workspace's skills and capabilities.

    A subagent's gets neither: the summary describes the Rig's agent, not the child's narrowed permissions
    (and costs milliseconds per child).
    """
    agent = rig.config.llm
    system = options.system_prompt or (own.system_prompt if own else None) or agent.system_prompt
    system = (system or DEFAULT_SYSTEM_PROMPT).replace("{root}", str(rig.workspace.root))
    if not options.system_prompt and lineage is None:
        from toolrig.agent.capabilities import prompt_sections

        system += prompt_sections(rig)
    return system


def offered_tools(
    rig: Rig, view: AgentView, options: RunOptions, model: str
) -> tuple[list[AnyTool], tuple[str, ...] | None]:
    """The tools the run's agent is offered, narrowed by the caller's lists and ``llm.tools``.

    Also the search core set when ``llm.tools`` is ``search`` (the model is shown it and tool_search).
    """
    tools = rig.registry_for(view).select(options.tools_allow, options.tools_deny).list()
    if options.tools_allow:  # a caller's own list wins over llm.tools
        return tools, None
    from toolrig.agent.toolset import SEARCH_CORE, resolved, shown_tools

    agent = rig.config.llm
    profile = rig.config.agents.get(rig.agent) if rig.agent else None
    choice = resolved(
        agent.tools,
        model=model,
        configured_window=agent.context_window,
        agent_lists_tools=profile is not None and profile.tools is not None,
    )
    return shown_tools(tools, choice, model=model), (tuple(SEARCH_CORE) if choice == "search" else None)


# ------------------------------------------------------------------------------ people in the loop


def first_channel(options: RunOptions, pause: PauseChannel | None, rig: Rig) -> ApprovalChannel | None:
    """Who answers a new run's approvals and questions (None: the Rig's own channel)."""
    approvals = options.approvals
    if approvals == "pause":
        return question_channel(options, pause, pause, rig)
    return question_channel(options, approvals, pause, rig)


def question_channel(
    options: RunOptions, channel: ApprovalChannel | None, pause: PauseChannel | None, rig: Rig
) -> ApprovalChannel | None:
    """Where the run's questions go: with its approvals (ask), to the pause (pause), or nowhere (skip)."""
    if options.questions == "ask":
        return channel
    approvals = channel if channel is not None else rig.governance.channel
    return QuestionsApart(questions=pause if options.questions == "pause" else None, approvals=approvals)


def resumed_questions(options: RunOptions, pause: PauseChannel | None) -> ApprovalChannel | None:
    """Where a resumed run's new questions go: where they would have gone had it never paused."""
    if options.questions == "pause":
        return pause
    approvals = options.approvals
    if options.questions == "ask" and approvals is not None and approvals != "pause":
        return approvals
    return None
