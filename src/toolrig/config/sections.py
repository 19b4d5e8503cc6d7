"""The sections that decide what agents may do: tools, rules, approvals, agents, limits and the workspace.

Every field that an untrusted workspace may change carries its ``Narrow`` rule (``toolrig.narrowing``);
a field without one is trusted-only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from toolrig.config.base import _OPERATORS, ApprovalMode, ProfileName, RateText, Section, Verdict
from toolrig.narrowing import Narrow


class RuleConfig(Section):
    """One permission rule: which tool, which of its calls (subject glob and/or argument predicate), what verdict."""

    tool: str = Field(min_length=1, description="Tool name glob or group:NAME.")
    subject: str | None = Field(
        default=None,
        min_length=1,
        description="Glob matched against what the call acts on (the command, a path, the URL, a recipient).",
    )
    args: dict[str, Any] | None = Field(
        default=None,
        description="Argument predicate: {argument: glob | value | [values] | {eq|ne|lt|le|gt|ge|in|glob: value}}.",
    )
    verdict: Verdict
    reason: str = Field(default="", description="Shown to the model when the rule denies, and in approval prompts.")

    @model_validator(mode="after")
    def _check_predicate(self) -> RuleConfig:
        for name, condition in (self.args or {}).items():
            if isinstance(condition, dict):
                unknown = sorted(set(condition) - _OPERATORS)
                if unknown or not condition:
                    raise ValueError(
                        f"args.{name}: unknown operator {', '.join(unknown) or '(none)'}; "
                        f"use {', '.join(sorted(_OPERATORS))}"
                    )
        return self


class ToolsConfig(Section):
    allow: Annotated[list[str], Narrow.INTERSECT] = Field(
        default_factory=list, description="Tool name globs or group:NAME offered to agents; empty = all."
    )
    deny: Annotated[list[str], Narrow.UNION] = Field(default_factory=list, description="Always wins over allow.")
    deferred: bool = Field(
        default=False,
        description="Send the model the core tools plus tool_search; a tool it finds is callable from its next turn.",
    )
    rules: Annotated[list[RuleConfig], Narrow.RESTRICTIVE] = Field(
        default_factory=list, description="Per-call verdicts; deny beats ask beats allow, whatever the order."
    )


class TelegramForwardConfig(Section):
    chat_id: int = Field(description="The chat (a user's or a group's id) that gets the requests.")
    bot_token_env: str = Field(description="The environment variable holding the bot's token (never the token).")
    base_url: str | None = Field(default=None, description="The Bot API's base URL (default api.telegram.org).")
    allowed_users: list[int] = Field(
        default_factory=list, description="In a group: only these users' presses count; empty: anyone in the chat."
    )
    poll_seconds: int = Field(default=25, ge=1, le=50, description="getUpdates long-poll length.")


class WebhookForwardConfig(Section):
    url: str = Field(description="Where each request is POSTed, signed with HMAC-SHA256 (X-Toolrig-Signature).")
    secret_env: str = Field(description="The environment variable holding the shared signing secret.")
    poll_url: str | None = Field(
        default=None, description="Where toolrig polls for the signed answer (GET ?id=...); else it must be POSTed."
    )
    poll_interval_seconds: float = Field(default=2.0, gt=0, le=300, description="How often to poll.")


class ForwardConfig(Section):
    """Where approvals and ask_user's questions also go, for a person who is not at the terminal."""

    telegram: TelegramForwardConfig | None = None
    webhook: WebhookForwardConfig | None = None


class ApprovalsConfig(Section):
    mode: Annotated[ApprovalMode, Narrow.STRICTER] = Field(
        default="off", description="off: nothing asks; smart: read-only tools run, the rest ask; always: all ask."
    )
    allow: list[str] = Field(
        default_factory=list, description="Allowlist: 'tool' (every call) or 'tool:glob' (matched against subjects)."
    )
    timeout_seconds: float = Field(default=300.0, gt=0, description="How long to wait for an answer.")
    fallback: Annotated[Literal["deny", "allow"], Narrow.STRICTER] = Field(
        default="deny", description="The answer when nobody answers in time or no one can be asked."
    )
    batch_window_seconds: float = Field(
        default=0.5, ge=0, description="Longest wait to gather parallel calls that ask at once into one prompt."
    )
    # Trusted-only (no Narrow rule): a workspace must not send requests (and their arguments) anywhere.
    forward: ForwardConfig = Field(
        default_factory=ForwardConfig,
        description="Also send each approval request and ask_user question to Telegram or a webhook.",
    )


class AgentApprovalsConfig(Section):
    mode: Annotated[ApprovalMode | None, Narrow.STRICTER] = Field(
        default=None, description="Overrides approvals.mode for this agent."
    )
    allow: list[str] = Field(default_factory=list, description="More allowlist patterns for this agent.")


class AgentConfig(Section):
    """A named agent's ("listener's") permissions, chosen with ``--agent NAME`` or ``Rig(agent=...)``."""

    tools: Annotated[list[str] | None, Narrow.SUBSET] = Field(
        default=None, description="Tool name globs or group:NAME this agent may use; absent = every offered tool."
    )
    # Narrowed per field of each tool's own settings model, once the tool is known (Rig, `narrow_settings`).
    tool_config: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per-tool settings for this agent, merged over the global tool_config."
    )
    rules: Annotated[list[RuleConfig], Narrow.RESTRICTIVE] = Field(
        default_factory=list, description="Rules that apply to this agent only."
    )
    approvals: AgentApprovalsConfig = Field(default_factory=AgentApprovalsConfig)
    rate_limit: Annotated[RateText | None, Narrow.RATE] = Field(
        default=None, description="Every call of this agent, like '100/hour'."
    )
    rate_limits: Annotated[dict[str, RateText], Narrow.RATES] = Field(
        default_factory=dict, description="Per tool (name glob) for this agent only, like {fetch_url: 10/minute}."
    )
    profile: ProfileName | None = Field(
        default=None, description="The tool profile this agent's model sees (claude, codebuff, native, camelagi)."
    )
    # ---- subagents (issue 14): what makes a profile an agent TYPE a parent can spawn. Every field below
    # narrows a child further than its parent; none of them can widen it (toolrig.agent.subagents.narrowing).
    description: str = Field(default="", description="When to use this agent type (shown to the parent model).")
    system_prompt: str | None = Field(
        default=None, description="Its system prompt (a child of this type, or a run as `--agent NAME`); default: ours."
    )
    model: str | None = Field(
        default=None, description="Its model (a child, or `--agent NAME`); absent or 'inherit': the parent's."
    )
    disallowed_tools: list[str] = Field(
        default_factory=list, description="Tool name globs (MCP tools as server/tool) removed from this type."
    )
    max_turns: int | None = Field(
        default=None, ge=1, description="Turn budget of one run of this agent (a child of its type, or `--agent NAME`)."
    )
    max_budget_usd: float | None = Field(
        default=None, gt=0, description="Spend cap of one child (out of the parent's)."
    )
    timeout_seconds: float | None = Field(default=None, gt=0, description="Wall-clock cap of one child.")
    output_mode: Literal["last_message", "structured", "all_messages"] = Field(
        default="last_message", description="What a child of this type returns to its parent."
    )
    output_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema that set_output values must match (output_mode: structured)."
    )
    spawns: list[str] = Field(
        default_factory=list, description="Agent types a child of this type may spawn itself (depth permitting)."
    )
    shared_memory: bool = Field(
        default=False, description="Use the parent's memory and kv namespace instead of agents/<id>/."
    )


class SubagentsConfig(Section):
    """Limits on delegation (see docs/agents.md); a workspace may only lower them."""

    max_depth: Annotated[int, Narrow.MIN] = Field(
        default=2, ge=0, le=8, description="How deep children may nest (0: no subagents at all)."
    )
    max_parallel: Annotated[int, Narrow.MIN] = Field(
        default=4, ge=1, le=256, description="Children of one run that run at once; the rest queue."
    )
    timeout_seconds: Annotated[float, Narrow.MIN] = Field(
        default=900.0, gt=0, description="Default wall-clock cap of one child."
    )
    max_turns: Annotated[int, Narrow.MIN] = Field(default=25, ge=1, description="Default turn budget of one child.")
    max_children: Annotated[int, Narrow.MIN] = Field(
        default=64, ge=1, le=10_000, description="Children one root run may start in total."
    )
    hide_child_text: bool = Field(
        default=False, description="Forward only children's tool events to the root's events, not their text."
    )
    progress_seconds: float = Field(default=1.0, gt=0, le=2.0, description="How often subagent_progress is sent.")


class AuditConfig(Section):
    enabled: bool = Field(default=True, description="Record every call in .toolrig/audit.db.")
    sync: Literal["normal", "full"] = Field(
        default="normal",
        description="normal: a row survives a crash of the process; full: also of the machine (fsync per row).",
    )


class HooksConfig(Section):
    enabled: bool = Field(default=True, description="Run hooks (scripts and Python hooks) at all.")
    timeout_seconds: float = Field(default=10.0, gt=0, description="A script hook running longer is stopped.")


class OutputConfig(Section):
    max_chars: Annotated[int, Narrow.MIN] = Field(
        default=100_000, ge=1_000, description="Largest result a model sees; the rest is kept to page through."
    )


class LimitsConfig(Section):
    timeout_seconds: Annotated[float, Narrow.MIN] = Field(default=120.0, gt=0, description="Default per-call timeout.")


class WorkspaceConfig(Section):
    extra_paths: list[str] = Field(default_factory=list, description="More directories tools may use.")
    read_only: Annotated[bool, Narrow.TRUE_WINS] = False
    deny_globs: Annotated[list[str], Narrow.GLOBS] = Field(
        default_factory=list,
        description="Gitignore-style globs (relative to the root) that tools may neither read nor write.",
    )
    read_only_globs: Annotated[list[str], Narrow.GLOBS] = Field(
        default_factory=list,
        description="Gitignore-style globs that tools may read but not change (.git/ is always read-only).",
    )
