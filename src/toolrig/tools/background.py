"""command_output, send_command_input, stop_command, list_commands: the background commands of this run.

Trust model: ids are input; a call reaches only the commands of its own run (``ctx.background``, passed in the
call's scope), never another run's, whatever id it names.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.background import BackgroundJobs

MAX_READ_CHARS = 30_000
MAX_INPUT_CHARS = 65_536  # per call: a pipe holds 64 KiB, and what it does not take is reported, not kept


def _jobs(ctx: ToolContext) -> BackgroundJobs:
    if ctx.background is None:
        raise ToolError(
            ErrorType.NOT_FOUND,
            "No background commands here: only an agent run (run, chat, the gateway) owns them.",
            "Start one with run_command and background: true from an agent run.",
            retryable=False,
        )
    return ctx.background


class CommandOutputInput(ToolInput):
    id: str = Field(max_length=40, description="The id run_command returned for the background command (bg1 ...).")
    max_chars: int = Field(default=MAX_READ_CHARS, ge=100, le=MAX_READ_CHARS, description="Most characters per stream.")
    wait_seconds: float = Field(
        default=0, ge=0, le=60, description="Wait up to this long for new output when there is none yet (0: don't)."
    )


class CommandStatus(ToolOutput):
    id: str
    command: str
    status: str = Field(description="running, exited, stopped or failed.")
    exit_code: int | None = Field(default=None, description="Its exit status once it exited (negative: a signal).")
    stopped: str | None = Field(default=None, description="Why it was stopped, if it was.")
    error: str | None = None
    running_seconds: float


class CommandOutputOutput(CommandStatus):
    stdout: str = Field(description="New standard output since the last read.")
    stderr: str = Field(description="New standard error since the last read.")
    more: bool = Field(description="More output is waiting (read again).")
    dropped_chars: int = Field(description="Output that was not kept before this read (only the newest is kept).")


class CommandOutput(Tool[CommandOutputInput, CommandOutputOutput]):
    name = "command_output"
    group = "background"
    read_only = True
    description = (
        "Read what a background command (run_command with background: true) wrote since the last read, "
        "with its status and, once it ended, its exit code."
    )

    async def execute(self, input: CommandOutputInput, ctx: ToolContext) -> CommandOutputOutput:
        return CommandOutputOutput(**await _jobs(ctx).read(input.id, input.max_chars, input.wait_seconds))


class SendCommandInputInput(ToolInput):
    id: str = Field(max_length=40, description="The background command's id.")
    # A subject, matched as written: a rule can refuse what is sent to an interpreter run_command started.
    text: Annotated[str, Subject("text")] = Field(
        default="",
        max_length=MAX_INPUT_CHARS,
        description="What to write to its standard input, as is (end a line with \\n).",
    )
    close: bool = Field(default=False, description="Then close its input (end of file), once all of text is sent.")


class SendCommandInputOutput(ToolOutput):
    id: str
    status: str = Field(description="running, exited, stopped or failed.")
    sent_bytes: int
    sent_chars: int = Field(description="How much of text was sent (its first sent_chars characters).")
    unsent_chars: int = Field(description="What its input pipe had no room for: send text[sent_chars:] again later.")
    closed: bool = Field(description="Its input is closed: it reads end of file once it has read what was sent.")


class SendCommandInput(Tool[SendCommandInputInput, SendCommandInputOutput]):
    name = "send_command_input"
    group = "background"
    destructive = True
    description = (
        "Write text to the standard input of a background command (run_command with background: true); "
        "close: true then ends its input. Never waits: what its pipe has no room for is reported unsent."
    )

    async def execute(self, input: SendCommandInputInput, ctx: ToolContext) -> SendCommandInputOutput:
        return SendCommandInputOutput(**_jobs(ctx).send(input.id, input.text, input.close))


class StopCommandInput(ToolInput):
    id: str = Field(max_length=40, description="The background command's id.")


class StopCommand(Tool[StopCommandInput, CommandStatus]):
    name = "stop_command"
    group = "background"
    destructive = True
    description = "Stop a background command and everything it started (SIGTERM, then SIGKILL)."

    async def execute(self, input: StopCommandInput, ctx: ToolContext) -> CommandStatus:
        job = await _jobs(ctx).stop(input.id)
        return CommandStatus(**job.row())


class ListCommandsInput(ToolInput):
    pass


class ListCommandsOutput(ToolOutput):
    commands: list[CommandStatus]


class ListCommands(Tool[ListCommandsInput, ListCommandsOutput]):
    name = "list_commands"
    group = "background"
    read_only = True
    description = "List this run's background commands with their status."

    async def execute(self, input: ListCommandsInput, ctx: ToolContext) -> ListCommandsOutput:
        rows: list[dict[str, Any]] = _jobs(ctx).rows() if ctx.background is not None else []
        return ListCommandsOutput(commands=[CommandStatus(**row) for row in rows])


TOOLS = [CommandOutput(), SendCommandInput(), StopCommand(), ListCommands()]
