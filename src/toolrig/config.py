"""Configuration: ``~/.toolrig/config.yaml`` then the workspace's ``.toolrig/config.yaml``, validated.

Trust model: the user's own file is trusted. A workspace's file comes with the code it sits in, so until
the user runs ``toolrig trust`` it may only narrow what the user allows (deny more, allow less, lower a
limit); settings that widen access or start processes are ignored with a warning. Every field states
how an untrusted workspace may change it (``Narrow``); a field without a rule is trusted-only.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolrig.errors import ConfigError
from toolrig.narrowing import Narrow
from toolrig.sandbox.atomic import atomic_write_text
from toolrig.sandbox.paths import STATE_DIR_NAME, toolrig_home

if TYPE_CHECKING:
    import yaml

log = logging.getLogger("toolrig.config")

CONFIG_FILE = "config.yaml"
TRUST_FILE = "trusted.json"
ALLOW_NOTHING = "!nothing"  # an allow pattern no tool name can match ('!' is not allowed in names)


# The levels of STRICTER fields, least strict first.
_LEVELS: dict[str, tuple[str, ...]] = {"mode": ("off", "smart", "always"), "fallback": ("allow", "deny")}


# ------------------------------------------------------------------------------------------ value formats

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+)\s*$")
_PERIODS = {
    "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}  # fmt: skip


def _per_second(text: str) -> float:
    count, seconds = parse_rate(text)
    return count / seconds


def parse_rate(text: str) -> tuple[int, float]:
    """``"10/minute"`` -> (10, 60.0): how many calls per how many seconds. ``"5/10m"`` is 5 per ten minutes."""
    match = _RATE.match(text.lower()) if isinstance(text, str) else None
    if not match or match.group(3) not in _PERIODS or int(match.group(1)) < 1 or match.group(2) == "0":
        raise ValueError(f"{text!r} is not a rate: write it like '10/minute', '100/hour', '5/second' or '1000/day'")
    return int(match.group(1)), _PERIODS[match.group(3)] * int(match.group(2) or 1)


def _check_rate(text: str) -> str:
    parse_rate(text)
    return text


RateText = Annotated[str, AfterValidator(_check_rate)]


def _check_profile(name: str) -> str:
    from toolrig.profiles import NAMES

    if name not in NAMES:
        raise ValueError(f"{name!r} is not a tool profile: use one of {', '.join(NAMES)}")
    return name


ProfileName = Annotated[str, AfterValidator(_check_profile)]
Verdict = Literal["allow", "ask", "deny"]
ApprovalMode = Literal["off", "smart", "always"]
_OPERATORS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "in", "glob"})


class Section(BaseModel):
    # defer_build: pydantic builds a model's validator on its first validation, not at import. A call with no
    # config file never validates one (``defaults``), and pays nothing for the 29 models' schemas.
    model_config = ConfigDict(extra="forbid", validate_default=True, defer_build=True)


S = TypeVar("S", bound=Section)


def defaults(model: type[S]) -> S:
    """``model()`` built without validating: the same values, fields left unset, no validator built.

    Validating the defaults needs every nested model's schema, most of a command's start-up when no config
    file exists (the common case). A test holds this equal to ``model()``, value for value and type for type.
    """
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        factory = info.default_factory
        if isinstance(factory, type) and issubclass(factory, Section):
            values[name] = defaults(factory)
        elif info.is_required():
            raise TypeError(f"{model.__name__}.{name} has no default")
        else:
            values[name] = info.get_default(call_default_factory=True, validated_data={})
    return cast(S, model.model_construct(_fields_set=set(), **values))  # pydantic's plugin says Section


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


class TelemetryConfig(Section):
    """OpenTelemetry traces and metrics (docs/telemetry.md); the OTEL_* environment variables apply too."""

    enabled: bool | None = Field(
        default=None, description="Export traces and metrics; unset: on when an OTLP endpoint is configured."
    )
    endpoint: str | None = Field(
        default=None, description="OTLP endpoint (else OTEL_EXPORTER_OTLP_ENDPOINT, else the application's)."
    )
    protocol: Literal["http/protobuf", "grpc"] | None = Field(
        default=None, description="OTLP transport (else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)."
    )
    service_name: str | None = Field(default=None, description="service.name (else OTEL_SERVICE_NAME, else toolrig).")
    capture_content: bool = Field(
        default=False, description="Record prompts, completions, tool arguments and results (redacted) on spans."
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


class PriceConfig(Section):
    input: float = Field(ge=0, description="USD per million input tokens.")
    output: float = Field(ge=0, description="USD per million output tokens.")
    cache_read: float = Field(default=0.0, ge=0)
    cache_write: float = Field(default=0.0, ge=0)


class LlmConfig(Section):
    """The model an agent talks to (``toolrig run`` / ``toolrig chat``).

    Endpoint, key and model are trusted-only: a workspace must not redirect prompts (and the code they
    carry) to another server or spend on another account. It may only lower the limits.
    """

    model: str | None = Field(default=None, description="claude-* goes to Anthropic; anything else OpenAI-compatible.")
    provider: Literal["auto", "anthropic", "openai"] = Field(
        default="auto", description="Force a provider; auto picks Anthropic for claude-* without a base_url."
    )
    base_url: str | None = Field(default=None, description="An OpenAI-compatible endpoint (Ollama, vLLM, ...).")
    api_key_env: str | None = Field(default=None, description="The variable holding the key; default per provider.")
    api_key: str | None = Field(default=None, description="The key itself (prefer api_key_env).")
    system_prompt: str | None = None
    thinking: Literal["adaptive", "off"] = "off"
    effort: Literal["low", "medium", "high", "max"] | None = None
    strict: bool | None = Field(default=None, description="OpenAI strict schemas; default: on for api.openai.com.")
    max_turns: Annotated[int, Narrow.MIN] = Field(default=25, ge=1)
    max_budget_usd: Annotated[float | None, Narrow.MIN] = Field(default=None, gt=0)
    max_tokens: Annotated[int, Narrow.MIN] = Field(default=16_000, ge=1)
    context_window: int | None = Field(
        default=None, ge=1, description="The model's context in tokens, for models toolrig does not know (local ones)."
    )
    tools: Literal["auto", "all", "core"] | list[str] = Field(
        default="auto",
        description="Which of the allowed tools the model is shown: all; core (a compact set for small models: "
        "read, search, edit, run); a list of tool name globs; auto (core when the model's context is 32k tokens "
        "or less, else all). An agent's own `tools:` list wins.",
    )
    request_timeout_seconds: Annotated[float, Narrow.MIN] = Field(default=600.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    price: PriceConfig | None = Field(default=None, description="Override the built-in price table.")
    tool_profile: ProfileName | None = Field(
        default=None,
        description="The names and shapes the model is offered: toolrig (default), claude, codebuff, native, camelagi.",
    )


class KeyValueStoreConfig(Section):
    backend: Literal["sqlite", "redis"] = Field(
        default="sqlite", description="sqlite: a WAL database under .toolrig/; redis: the server at `url`."
    )
    url: str = Field(default="redis://127.0.0.1:6379/0", description="Redis URL (redis backend only).")
    max_value_bytes: Annotated[int, Narrow.MIN] = Field(
        default=1_000_000, ge=1, le=512_000_000, description="Largest value, as UTF-8 JSON."
    )


class LibrarianStoreConfig(Section):
    backend: Literal["embedded", "basex"] = Field(
        default="embedded",
        description="embedded: files under .toolrig/librarian/ queried by Saxon; basex: a BaseX server.",
    )
    url: str = Field(default="basex://127.0.0.1:1984", description="BaseX server (basex://host:port).")
    user: str = Field(default="admin", description="BaseX user that may create databases.")
    password: str = Field(default="", description="BaseX password; prefer password_env.")
    password_env: str | None = Field(default=None, description="Environment variable holding the password.")
    query_timeout_seconds: Annotated[float, Narrow.MIN] = Field(
        default=10.0, gt=0, le=3600, description="Longest an XQuery may run before it is stopped."
    )


class MemoryStoreConfig(Section):
    semantic: bool = Field(default=False, description="Fuse BM25 with local embeddings (needs the `semantic` extra).")


class StoresConfig(Section):
    """Where agent state lives. Server URLs and credentials are trusted-only: no Narrow rule on them."""

    kv: KeyValueStoreConfig = Field(default_factory=KeyValueStoreConfig)
    librarian: LibrarianStoreConfig = Field(default_factory=LibrarianStoreConfig)
    memory: MemoryStoreConfig = Field(default_factory=MemoryStoreConfig)


# Words of letters and digits joined by single '-' or '_': never '__', which joins server and tool names.
MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*")


def _mcp_server_name(name: str) -> str:
    if len(name) > 32 or not MCP_SERVER_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid MCP server name: use up to 32 letters and digits, "
            "words joined by single '-' or '_'"
        )
    return name


class McpAuthConfig(Section):
    """OAuth 2.1 for a remote MCP server (docs/mcp.md): the browser flow, client credentials, or an IdP assertion.

    Secrets never sit in the file: they are named by environment variable or key file.
    """

    type: Literal["oauth", "client_credentials", "identity_assertion"] = Field(
        default="oauth",
        description="oauth: the user signs in once with `toolrig mcp login NAME`; client_credentials: a service "
        "account (client_secret_env or private_key_file); identity_assertion: an enterprise IdP's ID token "
        "exchanged for the server's token (SEP-990).",
    )
    scope: str | None = Field(
        default=None, description="Scopes to ask for on top of what the server asks for (space-separated)."
    )
    client_id: str | None = Field(
        default=None,
        description="A client registered with the authorization server beforehand; default: client_metadata_url "
        "where the server accepts it, else dynamic registration.",
    )
    client_secret_env: str | None = Field(default=None, description="Environment variable holding the client secret.")
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = Field(
        default=None, description="How a secret is sent to the token endpoint; default: basic with a secret, else none."
    )
    private_key_file: str | None = Field(
        default=None, description="client_credentials: PEM private key signing a private_key_jwt assertion."
    )
    signing_algorithm: str = Field(default="RS256", description="private_key_jwt: RS256, ES256, ...")
    issuer: str | None = Field(
        default=None,
        description="The authorization server these credentials belong to; they are sent nowhere else.",
    )
    client_metadata_url: str | None = Field(
        default=None, description="An https URL serving this client's metadata document (used as its client_id)."
    )
    client_name: str = Field(default="toolrig", description="The name the user sees on the consent page.")
    callback_port: int = Field(
        default=0, ge=0, le=65535, description="`mcp login`: port of the 127.0.0.1 redirect (0: any free one)."
    )
    store: Literal["auto", "keyring", "file"] = Field(
        default="auto",
        description="Where tokens are kept: the OS keyring when one is available (auto), or a 0600 file in ~/.toolrig.",
    )
    idp_token_endpoint: str | None = Field(default=None, description="identity_assertion: the IdP's token endpoint.")
    idp_client_id: str | None = Field(default=None, description="identity_assertion: this client's id at the IdP.")
    id_token_env: str | None = Field(
        default=None, description="identity_assertion: environment variable holding the user's IdP ID token."
    )

    @model_validator(mode="after")
    def _complete(self) -> McpAuthConfig:
        if self.type == "client_credentials":
            if not self.client_id:
                raise ValueError("client_credentials needs 'client_id'")
            if (self.client_secret_env is None) == (self.private_key_file is None):
                raise ValueError("client_credentials needs one of 'client_secret_env' or 'private_key_file'")
        if self.type == "identity_assertion":
            missing = [
                key
                for key in ("client_id", "client_secret_env", "issuer", "idp_token_endpoint", "id_token_env")
                if getattr(self, key) is None
            ]
            if missing:
                raise ValueError(f"identity_assertion needs {', '.join(repr(m) for m in missing)}")
        if self.client_metadata_url is not None and not self.client_metadata_url.startswith("https://"):
            raise ValueError("'client_metadata_url' must be an https:// URL")
        return self


class McpSamplingConfig(Section):
    """Lets a server ask the run's model to write something (MCP sampling): capped, and approved per request."""

    max_requests: int = Field(default=5, ge=1, le=1000, description="Sampling requests this server may make per run.")
    max_tokens: int = Field(default=1000, ge=1, le=100_000, description="Cap on each answer's length.")


class McpServerConfig(Section):
    """One MCP server whose tools join the catalog: a command to start (stdio) or a URL (streamable HTTP)."""

    command: str | None = Field(default=None, description="Program that serves MCP over stdio.")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="Added to a minimal environment (PATH, HOME...).")
    cwd: str | None = None
    url: str | None = Field(default=None, description="Streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp.")
    headers: dict[str, str] = Field(default_factory=dict, description="Sent with every HTTP request (auth).")
    timeout_seconds: float | None = Field(default=None, gt=0, description="Per call; default limits.timeout_seconds.")
    startup_timeout_seconds: float = Field(default=60.0, gt=0, description="Start, handshake and tool listing.")
    trust_annotations: bool = Field(
        default=False, description="Believe the server's readOnly/destructive hints (they steer approvals)."
    )
    auth: McpAuthConfig | None = Field(default=None, description="OAuth 2.1 for a remote server (url only).")
    roots: list[str] | None = Field(
        default=None,
        description=(
            "Directories the server is told it may work in (MCP roots; '.' is the workspace); default: none, and "
            "the server is not offered roots. What a server reads there is outside toolrig's rules."
        ),
    )
    sampling: McpSamplingConfig | None = Field(
        default=None, description="Let the server use the run's model (off when absent); each request asks the user."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (a stdio server) or 'url' (an HTTP server), not both or neither")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("'url' must start with http:// or https://")
        if self.auth is not None and self.url is None:
            raise ValueError("'auth' applies to a remote server ('url'); a stdio server gets secrets through 'env'")
        return self


McpServerName = Annotated[str, AfterValidator(_mcp_server_name)]


class CronJobConfig(Section):
    """A job from trusted config: read-only to the ``cron`` tool (edit the config to change it)."""

    name: str = Field(min_length=1, max_length=200, description="The job's name, unique among config jobs.")
    schedule: str = Field(description="Every N ('15m'), 5-field cron with an optional zone, '+20m' or an ISO time.")
    prompt: str = Field(min_length=1, description="What the agent is asked at each firing.")
    agent: str | None = Field(default=None, description="The agent profile (agents:) the run uses.")
    enabled: bool = True
    timezone: str = Field(default="UTC", description="IANA zone for cron lines and naive times.")
    retries: int = Field(
        default=0, ge=0, le=10, description="Retries with backoff after a failed run (0: at most once)."
    )


class WorkersConfig(Section):
    """Where durable tasks and schedules live and how workers run them (see docs/tasks.md)."""

    database_url: str | None = Field(
        default=None,
        description="postgresql://... shared by every worker; default: SQLite files under .toolrig/.",
    )
    concurrency: int = Field(default=4, ge=1, le=256, description="Tasks one worker runs at once.")
    poll_seconds: float = Field(default=0.5, gt=0, le=60, description="How often a worker looks for due work.")
    dead_after_seconds: float = Field(
        default=30.0, gt=0, description="A worker silent this long is dead: another recovers its runs."
    )
    misfire_grace_seconds: float = Field(
        default=60.0, ge=0, description="A firing noticed later than this is recorded as missed, not run late."
    )
    max_jobs: int = Field(default=50, ge=1, le=10_000, description="Cap on runtime jobs.")
    model_job_days: float = Field(
        default=7.0, gt=0, description="Jobs a model creates expire after this unless renewed."
    )


class SkillsConfig(Section):
    paths: list[str] = Field(
        default_factory=list, description="More folders of Agent Skills (each skill a <name>/SKILL.md), searched last."
    )


class Config(Section):
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    tool_config: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per-tool settings, validated by each tool's config model."
    )
    output: OutputConfig = Field(default_factory=OutputConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    llm: LlmConfig = Field(
        default_factory=LlmConfig, description="The model `toolrig run` / `toolrig chat` talk to, and run limits."
    )
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    rate_limits: Annotated[dict[str, RateText], Narrow.RATES] = Field(
        default_factory=dict, description="Per tool (name glob), shared by every agent, like {send_email: 10/minute}."
    )
    agents: dict[str, AgentConfig] = Field(default_factory=dict, description="Named agents and their permissions.")
    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig, description="Limits on delegation.")
    audit: AuditConfig = Field(default_factory=AuditConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    stores: StoresConfig = Field(default_factory=StoresConfig)
    workers: WorkersConfig = Field(default_factory=WorkersConfig)
    # Trusted-only (no Narrow rule): a workspace's config must not schedule prompts until trusted.
    cron: list[CronJobConfig] = Field(default_factory=list, description="Scheduled agent runs (config jobs).")

    # Trusted-only (no Narrow rule): a workspace's own config must never start processes until trusted.
    mcp_servers: dict[McpServerName, McpServerConfig] = Field(
        default_factory=dict,
        description="MCP servers whose tools join the catalog as 'server/tool' (names: letters, digits, '-', '_').",
    )
    skills: SkillsConfig = Field(default_factory=SkillsConfig, description="Where Agent Skills are found.")
    # Trusted-only (no Narrow rule): a workspace's own config must not send what its runs do elsewhere.
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig, description="OpenTelemetry export.")


@dataclass
class LoadedConfig:
    """The merged config and where each part came from, so later errors can still name file and line."""

    config: Config
    files: list[Path] = field(default_factory=list)
    trusted: bool = False
    warnings: list[str] = field(default_factory=list)
    # An untrusted workspace's tool settings, by (agent or None, tool): narrowed field by field against each
    # tool's own settings model when the Rig resolves them (`narrow_settings`), since only the tool knows it.
    pending_tool_config: dict[tuple[str | None, str], dict[str, Any]] = field(default_factory=dict)
    locations: dict[tuple[str, ...], tuple[Path, int]] = field(default_factory=dict)

    def where(self, *keys: str) -> tuple[Path | None, int | None]:
        """The file and line that set ``keys`` (e.g. ``("tool_config", "fetch_url")``), best effort."""
        for depth in range(len(keys), 0, -1):
            found = self.locations.get(tuple(keys[:depth]))
            if found:
                return found
        return (self.files[-1] if self.files else None), None


# ------------------------------------------------------------------------------------------ reading


def _line_index(node: yaml.Node, prefix: tuple[str, ...], out: dict[tuple[str, ...], int]) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = (*prefix, str(key_node.value))
            out[key] = key_node.start_mark.line + 1
            _line_index(value_node, key, out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = (*prefix, str(index))
            out[key] = item.start_mark.line + 1
            _line_index(item, key, out)


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """Parse a YAML file into data plus the line of every key; syntax errors name file and line."""
    import yaml  # only when a file exists: a call without one never parses YAML

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror}", file=path) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML: {problem}", file=path, line=mark.line + 1 if mark else None) from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError("the top level must be a mapping of settings", file=path, line=1)
    lines: dict[tuple[str, ...], int] = {}
    if node is not None:
        _line_index(node, (), lines)
    return data, lines


def _error_line(loc: tuple[int | str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    keys = tuple(str(part) for part in loc)
    for depth in range(len(keys), 0, -1):
        if keys[:depth] in lines:
            return lines[keys[:depth]]
    return None


def validate_file(path: Path) -> tuple[Config, dict[tuple[str, ...], int]]:
    data, lines = read_yaml(path)
    try:
        return Config.model_validate(data), lines
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        key = ".".join(str(part) for part in first["loc"])
        message = first["msg"]
        if first["type"] == "extra_forbidden":
            message = "unknown setting (check its spelling; `toolrig config --help` lists the settings)"
        more = len(exc.errors()) - 1
        if more:
            message += f" (and {more} more problem{'s' if more > 1 else ''} in this file)"
        raise ConfigError(message, file=path, key=key, line=_error_line(first["loc"], lines)) from None


# ------------------------------------------------------------------------------------------ trust


def _trust_path() -> Path:
    return toolrig_home() / TRUST_FILE


def trusted_directories() -> list[Path]:
    path = _trust_path()
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"the trust list is unreadable: {exc}", file=path) from None
    return [Path(p) for p in data.get("trusted", []) if isinstance(p, str)]


def is_trusted(root: Path) -> bool:
    root = root.resolve()
    return root in trusted_directories()


def set_trust(root: Path, trusted: bool = True) -> list[Path]:
    root = root.resolve()
    current = [p for p in trusted_directories() if p != root]
    if trusted:
        current.append(root)
    home = toolrig_home()
    home.mkdir(parents=True, exist_ok=True)
    atomic_write_text(_trust_path(), json.dumps({"trusted": [str(p) for p in current]}, indent=2) + "\n")
    return current


# ------------------------------------------------------------------------------------------ merging


def _rule(model: type[BaseModel], name: str) -> Narrow | None:
    for meta in model.model_fields[name].metadata:
        if isinstance(meta, Narrow):
            return meta
    return None


def _narrow_value(rule: Narrow, base: Any, proposed: Any, key: str, warnings: list[str], inherited: Any = None) -> Any:
    if rule is Narrow.RESTRICTIVE:
        added = [item for item in proposed if item not in base]
        kept = [item for item in added if getattr(item, "verdict", "allow") != "allow"]
        if len(kept) < len(added):
            warnings.append(
                f"'{key}': {len(added) - len(kept)} allow rule(s) ignored: this workspace is not trusted "
                "(an untrusted workspace may only add rules that deny or ask; run `toolrig trust` to allow it)"
            )
        return [*base, *kept]
    if rule is Narrow.UNION:
        return [*base, *(item for item in proposed if item not in base)]
    if rule is Narrow.GLOBS:
        # A later '!pattern' un-matches an earlier one: from an untrusted file it would lift the user's own.
        negations = [item for item in proposed if item.lstrip().startswith("!")]
        if negations:
            warnings.append(
                f"'{key}': {', '.join(map(repr, negations))} ignored: an untrusted workspace may add patterns "
                "but not '!' exceptions (run `toolrig trust` to allow it)"
            )
        return [*base, *(item for item in proposed if item not in base and item not in negations)]
    if rule is Narrow.STRICTER:
        levels = _LEVELS[key.rsplit(".", 1)[-1]]
        effective = inherited if base is None else base  # an agent's unset mode is the global one
        if proposed is None or effective is None or levels.index(proposed) >= levels.index(effective):
            return base if proposed is None else proposed
        warnings.append(
            f"'{key}: {proposed}' is ignored: it is less strict than {effective!r} and this workspace is not trusted"
        )
        return base
    if rule is Narrow.SUBSET:
        if proposed is None:
            return base
        if base is None:
            return list(proposed)
        return [item for item in base if item in proposed] or [ALLOW_NOTHING]
    if rule is Narrow.RATE:
        if proposed is None:
            return base
        if base is None or _per_second(proposed) <= _per_second(base):
            return proposed
        warnings.append(f"'{key}: {proposed}' is ignored: it is higher than {base!r}")
        return base
    if rule is Narrow.RATES:
        merged = dict(base)
        for pattern, text in proposed.items():
            if pattern not in merged or _per_second(text) <= _per_second(merged[pattern]):
                merged[pattern] = text
            else:
                warnings.append(f"'{key}.{pattern}: {text}' is ignored: it is higher than {merged[pattern]!r}")
        return merged
    if rule is Narrow.INTERSECT:
        if not proposed:
            return base
        if not base:
            return list(proposed)
        kept = [item for item in base if item in proposed]
        # An empty allow list means "all": never let an intersection widen to that.
        return kept or [ALLOW_NOTHING]
    if rule is Narrow.MIN:
        # None means "no bound" (a budget nobody set): any number narrows it.
        if base is None or proposed is None:
            return proposed if base is None else base
        return min(base, proposed)
    return bool(base or proposed)


UNTRUSTED = "this workspace is not trusted (run `toolrig trust` to allow it)"


def _merge_narrowing(
    base: BaseModel,
    workspace: BaseModel,
    path: str,
    warnings: list[str],
    inherit: BaseModel | None = None,
    why: str = UNTRUSTED,
) -> BaseModel:
    """``base`` with the workspace's values applied by each field's rule; ``inherit`` fills unset levels.

    ``why`` ends the warning for a field without a rule, whose value is ignored: who may not widen it.
    """
    updates: dict[str, Any] = {}
    for name in workspace.model_fields_set:
        proposed = getattr(workspace, name)
        current = getattr(base, name)
        rule = _rule(type(base), name)
        key = f"{path}{name}"
        if name == "tool_config" and isinstance(base, Config | AgentConfig):
            continue  # kept in LoadedConfig.pending_tool_config, narrowed by each tool's own model
        if name == "agents" and isinstance(base, Config) and isinstance(workspace, Config):
            updates[name] = _narrow_agents(base, workspace.agents, warnings)
        elif rule is not None:
            inherited = getattr(inherit, name, None) if inherit is not None else None
            updates[name] = _narrow_value(rule, current, proposed, key, warnings, inherited)
        elif isinstance(current, BaseModel) and isinstance(proposed, BaseModel):
            inner = getattr(inherit, name, None) if inherit is not None else None
            updates[name] = _merge_narrowing(
                current, proposed, f"{key}.", warnings, inner if isinstance(inner, BaseModel) else None, why
            )
        elif proposed != current:
            warnings.append(f"'{key}' is ignored: {why}")
    return base.model_copy(update=updates)


def _narrow_agents(user: Config, proposed: dict[str, AgentConfig], warnings: list[str]) -> dict[str, AgentConfig]:
    """An agent from an untrusted workspace narrows like the rest: over the user's agent, or a blank one.

    A blank agent inherits the global settings, so its unset approval mode stands for ``approvals.mode``:
    a workspace agent with ``approvals.mode: off`` under a global ``always`` is ignored, not obeyed.
    """
    merged = dict(user.agents)
    inherit = AgentConfig(approvals=AgentApprovalsConfig(mode=user.approvals.mode))
    for name, agent in proposed.items():
        base = user.agents.get(name) or AgentConfig()
        narrowed = _merge_narrowing(base, agent, f"agents.{name}.", warnings, inherit)
        merged[name] = AgentConfig.model_validate(narrowed.model_dump())
    return merged


def pending_tool_config(workspace: Config) -> dict[tuple[str | None, str], dict[str, Any]]:
    """The untrusted workspace's tool settings, by (agent or None, tool), to narrow once the tools are known."""
    pending: dict[tuple[str | None, str], dict[str, Any]] = {
        (None, tool): dict(values) for tool, values in workspace.tool_config.items()
    }
    for name, agent in workspace.agents.items():
        pending.update({(name, tool): dict(values) for tool, values in agent.tool_config.items()})
    return pending


def narrow_settings(
    current: BaseModel, proposed: dict[str, Any], key: str, warnings: list[str], why: str = UNTRUSTED
) -> BaseModel:
    """A tool's settings with an untrusted workspace's values applied by each field's ``Narrow`` rule.

    Fields without a rule (a tool's ``mode``, ``allow_loopback``, ``env_set``...) can widen what the tool
    does, so the workspace's value is ignored with a warning until ``toolrig trust``. A subagent's type is
    narrowed against its parent's settings the same way (``why`` says so in the warning).
    """
    model = type(current)
    try:
        workspace = model.model_validate(proposed)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        source = "from an untrusted workspace" if why == UNTRUSTED else why
        warnings.append(f"'{key}' is ignored: {where}: {first['msg']} ({source})")
        return current
    narrowed = _merge_narrowing(current, workspace, f"{key}.", warnings, why=why)
    return model.model_validate(narrowed.model_dump())


def _applied_lines(
    lines: dict[tuple[str, ...], int], workspace: Config, merged: Config, user: Config
) -> dict[tuple[str, ...], int]:
    """The workspace file's line numbers for the values that reached the merged config, keyed where they landed."""
    ws, into, base = workspace.model_dump(), merged.model_dump(), user.model_dump()
    out: dict[tuple[str, ...], int] = {}
    for key, line in lines.items():
        landed = _landed(key, ws, into, base)
        if landed is not None:
            out[landed] = line
    return out


def _landed(key: tuple[str, ...], ws: Any, into: Any, base: Any) -> tuple[str, ...] | None:
    out: list[str] = []
    for part in key:
        if isinstance(ws, list) and isinstance(into, list) and part.isdigit() and int(part) < len(ws):
            item = ws[int(part)]
            start = len(base) if isinstance(base, list) else 0
            index = next((j for j in range(start, len(into)) if into[j] == item), None)
            if index is None:
                return None
            out.append(str(index))
            ws, into, base = item, into[index], None
        elif isinstance(ws, dict) and isinstance(into, dict) and part in ws and part in into:
            out.append(part)
            ws, into, base = ws[part], into[part], base.get(part) if isinstance(base, dict) else None
        else:
            return None
    return tuple(out) if ws == into else None


def _merge_trusted(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_trusted(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(root: str | os.PathLike[str] = ".", *, user_file: Path | None = None) -> LoadedConfig:
    """Read, validate and merge the user's and the workspace's config files."""
    root_path = Path(root).resolve()
    user_path = user_file or toolrig_home() / CONFIG_FILE
    workspace_path = root_path / STATE_DIR_NAME / CONFIG_FILE
    user_config = defaults(Config)
    loaded = LoadedConfig(user_config)
    user_data: dict[str, Any] = {}
    if user_path.is_file():
        user_config, lines = validate_file(user_path)
        user_data = user_config.model_dump(exclude_unset=True)
        loaded.files.append(user_path)
        loaded.locations.update({k: (user_path, v) for k, v in lines.items()})
    loaded.config = user_config
    if workspace_path.is_file() and workspace_path.resolve() != user_path.resolve():
        workspace_config, lines = validate_file(workspace_path)
        loaded.files.append(workspace_path)
        loaded.trusted = is_trusted(root_path)
        if loaded.trusted:
            loaded.locations.update({k: (workspace_path, v) for k, v in lines.items()})
            merged = _merge_trusted(user_data, workspace_config.model_dump(exclude_unset=True))
            loaded.config = Config.model_validate(merged)
        else:
            narrowed = _merge_narrowing(user_config, workspace_config, "", loaded.warnings)
            loaded.pending_tool_config = pending_tool_config(workspace_config)
            loaded.config = Config.model_validate(narrowed.model_dump())
            # Only the lines that took effect, at the index they landed on: an ignored line never decides.
            applied = _applied_lines(lines, workspace_config, loaded.config, user_config)
            loaded.locations.update({k: (workspace_path, v) for k, v in applied.items()})
            for warning in loaded.warnings:
                log.warning("%s: %s", workspace_path, warning)
    return loaded


def config_from(value: LoadedConfig | Config | dict[str, Any] | str | os.PathLike[str]) -> LoadedConfig:
    """Accept loaded files, a Config, a plain dict, or the path of a YAML file, for ``Rig(config=...)``."""
    if isinstance(value, LoadedConfig):
        return value
    if isinstance(value, Config):
        return LoadedConfig(value, trusted=True)
    if isinstance(value, dict):
        try:
            return LoadedConfig(Config.model_validate(value), trusted=True)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            key = ".".join(str(p) for p in first["loc"])
            raise ConfigError(first["msg"], key=key) from None
    path = Path(value)
    config, lines = validate_file(path)
    return LoadedConfig(config, files=[path], trusted=True, locations={k: (path, v) for k, v in lines.items()})
