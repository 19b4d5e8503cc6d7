"""A real ``toolrig mcp serve`` over stdio, with tools that exercise progress, cancellation and approvals.

Run as ``python -m tests.support.mcp_fixture_server --root DIR [--fallback allow] [--governance-only]``:
the same McpToolServer the command builds, plus test tools and a test-local approval gate that asks the
rig's approval channel (the MCP elicitation channel) before ``guarded_write`` runs. With
``--governance-only`` the test gate is left out and the config's approval rules decide.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading

import anyio
from pydantic import Field

from toolrig import Rig, Tool, ToolContext, ToolError, ToolInput, ToolOutput
from toolrig.adapters.mcp_server import McpToolServer
from toolrig.approvals import ApprovalRequest, fingerprint
from toolrig.errors import ErrorType
from toolrig.executor import Extensions, ToolCall
from toolrig.sandbox.atomic import atomic_write_text

CANCELLED: dict[str, threading.Event] = {}


class CountIn(ToolInput):
    steps: int = Field(ge=1, le=1000)


class CountOut(ToolOutput):
    counted: int


class CountUp(Tool[CountIn, CountOut]):
    name = "count_up"
    group = "fixture"
    description = "Count to steps, reporting progress at each step."
    read_only = True

    async def execute(self, input: CountIn, ctx: ToolContext) -> CountOut:
        for step in range(1, input.steps + 1):
            ctx.progress(step, input.steps, f"step {step}")
            await anyio.lowlevel.checkpoint()
        return CountOut(counted=input.steps)


class TagIn(ToolInput):
    tag: str


class WaitOut(ToolOutput):
    stopped_by: str


class WaitForCancel(Tool[TagIn, WaitOut]):
    """Blocks a worker thread until the call is cancelled; records that it saw the cancellation."""

    name = "wait_for_cancel"
    group = "fixture"
    description = "Wait (in a worker thread) until the call is cancelled."
    read_only = True

    def execute(self, input: TagIn, ctx: ToolContext) -> WaitOut:
        seen = CANCELLED.setdefault(input.tag, threading.Event())
        ctx.progress(0, None, "waiting")
        if not ctx.cancel.wait(60):
            raise ToolError(ErrorType.TIMEOUT, "nobody cancelled the call")
        seen.set()
        return WaitOut(stopped_by=ctx.cancel.reason)


class SeenOut(ToolOutput):
    cancelled: bool


class SawCancel(Tool[TagIn, SeenOut]):
    name = "saw_cancel"
    group = "fixture"
    description = "Whether wait_for_cancel with this tag saw its cancellation (waits up to 20 s)."
    read_only = True

    def execute(self, input: TagIn, ctx: ToolContext) -> SeenOut:
        return SeenOut(cancelled=CANCELLED.setdefault(input.tag, threading.Event()).wait(20))


class WriteIn(ToolInput):
    path: str
    text: str


class WriteOut(ToolOutput):
    written: int


class GuardedWrite(Tool[WriteIn, WriteOut]):
    name = "guarded_write"
    group = "fixture"
    description = "Write a file in the workspace; needs the user's approval."
    destructive = True

    def execute(self, input: WriteIn, ctx: ToolContext) -> WriteOut:
        atomic_write_text(ctx.workspace.resolve(input.path, write=True), input.text)
        return WriteOut(written=len(input.text))

    def subjects(self, input: WriteIn) -> list[str]:
        return [input.path]


class EchoOut(ToolOutput):
    text: str
    child_read: int


class Noisy(Tool[TagIn, EchoOut]):
    """Writes to stdout three ways and runs a child that reads stdin: none of it may touch the protocol."""

    name = "noisy"
    group = "fixture"
    description = "Echo the tag back, after printing junk and running `cat` on the inherited stdin."
    read_only = True

    def execute(self, input: TagIn, ctx: ToolContext) -> EchoOut:
        print("junk from print()")
        sys.stdout.flush()
        os.write(1, b"junk written to fd 1\n")
        child = subprocess.run(["cat"], capture_output=False, stdout=subprocess.PIPE, timeout=10, check=False)
        return EchoOut(text=input.tag, child_read=len(child.stdout))


class ApprovalGate:
    """The test's approval policy: ``guarded_write`` needs a yes from the call's approval channel.

    The MCP server passes each request's channel (asking the client that made it) with the call, in its scope.
    """

    def __init__(self, rig_ref: list[Rig]) -> None:
        self.rig_ref = rig_ref

    async def __call__(self, call: ToolCall) -> None:
        if call.name != "guarded_write":
            return
        channel = call.channel or self.rig_ref[0].approval_channel
        if channel is None:
            raise ToolError(ErrorType.DENIED, "no approval channel")
        request = ApprovalRequest(
            id=call.call_id,  # a request is known by its call's id: that is how the channel finds the client
            tool=call.name,
            args=call.raw_args,
            subjects=tuple(call.subjects),
            reason="It writes a file.",
            fingerprint=fingerprint(call.name, call.raw_args),
        )
        [decision] = await channel.decide([request])
        call.approval = decision.verdict
        if decision.verdict == "deny":
            raise ToolError(ErrorType.DENIED, f"Not approved: {decision.reason}.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--fallback", choices=["deny", "allow"], default="deny")
    parser.add_argument("--approval-timeout", type=float, default=30.0)
    parser.add_argument("--governance-only", action="store_true", help="no test gate: config rules decide")
    options = parser.parse_args()
    rig_ref: list[Rig] = []
    extensions = Extensions(approval=[] if options.governance_only else [ApprovalGate(rig_ref)])
    rig = Rig(
        options.root,
        tools=[CountUp(), WaitForCancel(), SawCancel(), GuardedWrite(), Noisy()],
        extensions=extensions,
    )
    rig_ref.append(rig)
    server = McpToolServer(rig, approval_fallback=options.fallback, approval_timeout=options.approval_timeout)
    anyio.run(server.serve_stdio)


if __name__ == "__main__":
    main()
