"""The whole config file's model: one field per section, in the order ``toolrig config keys`` lists them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from toolrig.config.base import RateText, Section, ToolSettings
from toolrig.config.channels import ChannelsConfig
from toolrig.config.sections import (
    AgentConfig,
    ApprovalsConfig,
    AuditConfig,
    HooksConfig,
    LimitsConfig,
    OutputConfig,
    SubagentsConfig,
    ToolsConfig,
    WorkspaceConfig,
)
from toolrig.config.services import (
    CronJobConfig,
    LlmConfig,
    McpServerConfig,
    McpServerName,
    SkillsConfig,
    StoresConfig,
    TelemetryConfig,
    WorkersConfig,
)
from toolrig.narrowing import Narrow


class Config(Section):
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    tool_config: ToolSettings = Field(
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
    # Trusted-only (no Narrow rule): a workspace's config must not open a bot to anyone until trusted.
    channels: ChannelsConfig = Field(
        default_factory=ChannelsConfig, description="Chat channels inside `toolrig serve` (Telegram)."
    )
