"""The sections that reach outside the process: the model, the stores, MCP servers, schedules and skills.

Endpoints, credentials and commands here are trusted-only (no ``Narrow`` rule): a workspace must not send
prompts elsewhere, spend on another account or start processes until the user trusts it.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from toolrig.config.base import ProfileName, Section
from toolrig.narrowing import Narrow


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
    tools: Literal["auto", "all", "core", "search"] | list[str] = Field(
        default="auto",
        description="Which of the allowed tools the model is shown: all; core (a compact set for small models: "
        "read, search, edit, run); search (a wider core set plus tool_search: the rest is listed once a lookup "
        "finds it, and callable throughout); a list of tool name globs; auto (core when the model's context is "
        "32k tokens or less, else search). An agent's own `tools:` list wins.",
    )
    request_timeout_seconds: Annotated[float, Narrow.MIN] = Field(default=600.0, gt=0)
    run_timeout_seconds: Annotated[float | None, Narrow.MIN] = Field(
        default=None, gt=0, description="Stop a whole run after this many seconds (`toolrig run --timeout` wins)."
    )
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
    model_min_interval_seconds: float = Field(  # trusted-only: no mark lets an untrusted layer lower the floor
        default=60.0, ge=1, description="A schedule a model creates fires at most this often (each firing is a run)."
    )
    model_max_jobs: Annotated[int, Narrow.MIN] = Field(
        default=10, ge=1, le=10_000, description="Live jobs one agent's model may have created at once."
    )


class SkillsConfig(Section):
    paths: list[str] = Field(
        default_factory=list, description="More folders of Agent Skills (each skill a <name>/SKILL.md), searched last."
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
