"""Configuration: ``~/.toolrig/config.yaml`` then the workspace's ``.toolrig/config.yaml``, validated.

Trust model: the user's own file is trusted. A workspace's file comes with the code it sits in, so until
the user runs ``toolrig trust`` it may only narrow what the user allows (deny more, allow less, lower a
limit); settings that widen access or start processes are ignored with a warning. Every field states
how an untrusted workspace may change it (``Narrow``); a field without a rule is trusted-only.

The package is split by concern: ``base`` (the section model, value formats), ``sections`` and ``services``
(the settings), ``schema`` (the whole file), ``source`` (reading YAML with lines), ``trust`` (the trust
list), ``narrowing`` (layering an untrusted file), ``loading`` (both files, merged). Import from here.
"""

from __future__ import annotations

from toolrig.config.base import ApprovalMode, ProfileName, RateText, Section, Verdict, defaults, parse_rate
from toolrig.config.channels import ChannelsConfig, TelegramChannelConfig, TelegramWebhookConfig
from toolrig.config.loading import CONFIG_FILE, LoadedConfig, config_from, load_config
from toolrig.config.narrowing import ALLOW_NOTHING, UNTRUSTED, narrow_settings, pending_tool_config
from toolrig.config.schema import Config
from toolrig.config.sections import (
    AgentApprovalsConfig,
    AgentConfig,
    ApprovalsConfig,
    AuditConfig,
    ForwardConfig,
    HooksConfig,
    LimitsConfig,
    OutputConfig,
    RuleConfig,
    SubagentsConfig,
    TelegramForwardConfig,
    ToolsConfig,
    WebhookForwardConfig,
    WorkspaceConfig,
)
from toolrig.config.services import (
    MCP_SERVER_NAME,
    CronJobConfig,
    KeyValueStoreConfig,
    LibrarianStoreConfig,
    LlmConfig,
    McpAuthConfig,
    McpSamplingConfig,
    McpServerConfig,
    MemoryStoreConfig,
    PriceConfig,
    SkillsConfig,
    StoresConfig,
    TelemetryConfig,
    WorkersConfig,
)
from toolrig.config.source import file_problems, read_yaml, validate_file
from toolrig.config.trust import TRUST_FILE, is_trusted, set_trust, trusted_directories

__all__ = [
    "ALLOW_NOTHING",
    "CONFIG_FILE",
    "MCP_SERVER_NAME",
    "TRUST_FILE",
    "UNTRUSTED",
    "AgentApprovalsConfig",
    "AgentConfig",
    "ApprovalMode",
    "ApprovalsConfig",
    "AuditConfig",
    "ChannelsConfig",
    "Config",
    "CronJobConfig",
    "ForwardConfig",
    "HooksConfig",
    "KeyValueStoreConfig",
    "LibrarianStoreConfig",
    "LimitsConfig",
    "LlmConfig",
    "LoadedConfig",
    "McpAuthConfig",
    "McpSamplingConfig",
    "McpServerConfig",
    "MemoryStoreConfig",
    "OutputConfig",
    "PriceConfig",
    "ProfileName",
    "RateText",
    "RuleConfig",
    "Section",
    "SkillsConfig",
    "StoresConfig",
    "SubagentsConfig",
    "TelegramChannelConfig",
    "TelegramForwardConfig",
    "TelegramWebhookConfig",
    "TelemetryConfig",
    "ToolsConfig",
    "Verdict",
    "WebhookForwardConfig",
    "WorkersConfig",
    "WorkspaceConfig",
    "config_from",
    "defaults",
    "file_problems",
    "is_trusted",
    "load_config",
    "narrow_settings",
    "parse_rate",
    "pending_tool_config",
    "read_yaml",
    "set_trust",
    "trusted_directories",
    "validate_file",
]
