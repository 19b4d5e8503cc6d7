"""The attribute, span and metric names toolrig emits, in one place so a test can hold them to the conventions.

``GENAI`` are names defined by the OpenTelemetry GenAI semantic conventions (the version is ``SEMCONV``);
``OWN`` are toolrig's own, under the ``toolrig.`` prefix the conventions leave to an instrumentation.
docs/telemetry.md prints both tables; tests/telemetry checks every name a span carries is in one of them.
"""

from __future__ import annotations

SEMCONV = "1.37.0"  # gen_ai.provider.name, gen_ai.tool.call.arguments/result and *.messages arrived in 1.37

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION_ID = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOKEN_TYPE = "gen_ai.token.type"  # noqa: S105 - a name, not a secret
ERROR_TYPE = "error.type"

# Metrics the conventions define (histograms: tokens in {token}, durations in seconds).
TOKEN_USAGE = "gen_ai.client.token.usage"  # noqa: S105 - a name, not a secret
OPERATION_DURATION = "gen_ai.client.operation.duration"
FIRST_CHUNK_METRIC = "gen_ai.client.operation.time_to_first_chunk"

GENAI = frozenset(
    {
        OPERATION,
        PROVIDER,
        REQUEST_MODEL,
        RESPONSE_MODEL,
        FINISH_REASONS,
        TIME_TO_FIRST_CHUNK,
        INPUT_TOKENS,
        OUTPUT_TOKENS,
        AGENT_NAME,
        AGENT_ID,
        CONVERSATION_ID,
        TOOL_NAME,
        TOOL_CALL_ID,
        TOOL_TYPE,
        TOOL_ARGUMENTS,
        TOOL_RESULT,
        INPUT_MESSAGES,
        OUTPUT_MESSAGES,
        TOKEN_TYPE,
        ERROR_TYPE,
    }
)

# toolrig's own: what governance decided and how, which the conventions have no names for.
CALLED_AS = "toolrig.called_as"  # the name the model used under a profile (Bash for run_command)
ORIGIN = "toolrig.origin"  # agent, mcp, cli, python
DECISION = "toolrig.decision"  # the audit row's decision: allow, deny, ask, rate_limited, error
DECIDED_BY = "toolrig.decided_by"  # the rule or setting that decided
APPROVAL = "toolrig.approval"  # how an approval was answered: allow_once, allow_always, deny, timeout
OUTCOME = "toolrig.outcome"  # ok or error
PARENT_AGENT_ID = "toolrig.parent_agent.id"
STOP_REASON = "toolrig.stop_reason"
CONTAINMENT = "toolrig.command.containment"  # run_command's `containment`: what holds the command
TASK_ID = "toolrig.task.id"  # a subagent's task id, or a durable task's
PARENT_TASK_ID = "toolrig.parent_task.id"  # the run that spawned a subagent
TASK_KIND = "toolrig.task.kind"

OWN = frozenset(
    {
        CALLED_AS,
        ORIGIN,
        DECISION,
        DECIDED_BY,
        APPROVAL,
        OUTCOME,
        PARENT_AGENT_ID,
        STOP_REASON,
        CONTAINMENT,
        TASK_ID,
        PARENT_TASK_ID,
        TASK_KIND,
    }
)

TOOL_CALLS = "toolrig.tool.calls"  # counter by tool, decision and outcome
APPROVAL_WAIT = "toolrig.approval.wait"  # histogram, seconds a call waited for its answer
COMMANDS = "toolrig.command.runs"  # counter of run_command calls by the containment in force
