"""Governance wired into the executor: the gates every call passes and the sink that records it.

One ``Governance`` per ``Rig`` fills the executor's extension points, so the same policy, rate limits,
approvals and audit hold for every consumer: the agent loop, the MCP server, the command line, a test.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.approvals.broker import Answer, ApprovalBroker
from toolrig.approvals.channel import ApprovalChannel
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest, RefusedAnswer, fingerprint
from toolrig.approvals.questions import answered, question_from, question_json, refused, reply_from, reply_json
from toolrig.errors import ConfigError, ErrorType, ToolError
from toolrig.event_bus import EventSink
from toolrig.forms import FormError
from toolrig.policy.ratelimit import RateLimiter, over_limit
from toolrig.policy.rules import Policy
from toolrig.policy.subjects import escape, kind_of, view

if TYPE_CHECKING:
    from toolrig.config import LoadedConfig
    from toolrig.gate import Extensions, Reserved, ToolCall
    from toolrig.policy.audit import AuditLog
    from toolrig.registry import AnyTool
    from toolrig.result import ToolResult
    from toolrig.sandbox.paths import Workspace

log = logging.getLogger("toolrig.policy")


class Governance:
    """The one gate's policy half, built once per Rig: admission, rules, rate limits, approvals, the audit row.

    Every consumer's calls meet here, so a rule, a limit or an audit row cannot depend on who called; what does
    depend on the caller (its agent's view, its approval channel) comes with each call, never stored here.
    """

    def __init__(
        self,
        loaded: LoadedConfig,
        workspace: Workspace,
        *,
        events: EventSink,
        channel: ApprovalChannel | None = None,
        allowlist_file: Path | None = None,
        forward: Sequence[ApprovalChannel] = (),
    ) -> None:
        config = loaded.config
        self.config = config
        self.workspace = workspace
        self.events = events
        self.allowlist_file = allowlist_file  # where "allow always" is saved; None keeps it in memory
        self._admission: Reserved | None = None  # set by ``install``, like the other reserved steps below
        self.policy = Policy(config, workspace, loaded)  # also binds its plans (the setter below)
        approvals = config.approvals
        self.broker = ApprovalBroker(
            channel,
            timeout=approvals.timeout_seconds,
            fallback=approvals.fallback,
            batch_window=approvals.batch_window_seconds,
            forward=forward,
        )
        # Each gate and the audit sink takes its place in the executor's extension points only once it has
        # something to do (``install``); until then a call does not walk it. Set by ``install``.
        self._rate_gate: Reserved | None = None
        self._approval_gate: Reserved | None = None
        self._audit_sink: Reserved | None = None
        # Always there (its database opens on the first token drawn): a caller's view may bring limits of its own.
        self._limiter: RateLimiter | None = RateLimiter(config, workspace.state_dir)
        self._audit: AuditLog | None = None  # opened with the first row: listing tools needs no database
        # Read once, as every setting here: the sink waits off the path when it is off, so reading it per
        # call (a config object flipped afterwards) would turn the audit off for some calls and on for none.
        self._auditing = config.audit.enabled

    @property
    def policy(self) -> Policy:
        return self._policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        """The rules every call is decided by from the next call on, its plans bound with it.

        The gates read the plans directly on every call (one lookup); a policy put in place without them
        would leave the old policy's cached decisions answering for the new one.
        """
        self._policy = policy
        self._policy_plans = policy._plans  # cleared in place by the policy, never replaced by it
        if self._admission is not None:
            self._admission.wake()  # its agents and outright denials are its own: admission asks it from now on

    @property
    def limiter(self) -> RateLimiter | None:
        return self._limiter

    @limiter.setter
    def limiter(self, limiter: RateLimiter | None) -> None:
        """Rate limits from now on: the rate-limit gate joins the calls' path before the next call."""
        self._limiter = limiter
        if limiter is not None and self._rate_gate is not None:
            self._rate_gate.wake()

    @property
    def audit(self) -> AuditLog | None:
        if self._audit is None and self._auditing:
            from toolrig.policy.audit import AuditLog

            self._audit = AuditLog(self.workspace.state_dir, sync=self.config.audit.sync)
        return self._audit

    def install(self, extensions: Extensions) -> None:
        # Admission refuses a tool not offered to its caller before its arguments are read (no schema shows
        # through their errors). Always on the path: a call may bring its own view (a subagent's), so whether
        # some caller is refused a tool is not known when the rig is built.
        self._admission = extensions.reserve("admission", self.check_offered, awake=True)
        extensions.policy.append(self.check_policy)  # always: every call's verdict is the policy's
        # The others wait outside the path until they have something to do, each woken by what gives it that:
        # rate limits (``limiter``); a verdict "ask", or a channel that batches (``check_policy``); the audit
        # log turned on, or that channel (the sink also tells the broker a call is over).
        self._rate_gate = extensions.reserve("rate_limit", self.check_rate, awake=True)
        self._approval_gate = extensions.reserve("approval", self.check_approval, awake=False)
        self._audit_sink = extensions.reserve("audit", self.record, awake=self._auditing)

    @property
    def channel(self) -> ApprovalChannel | None:
        return self.broker.channel

    # ------------------------------------------------------------------------------ gates

    def check_offered(self, call: ToolCall) -> None:
        """Admission: a tool this agent is not offered (or denied outright) is refused before parsing."""
        tool = call.tool
        if tool is None:
            return
        agent = call.agent
        plan = self._policy_plans.get((tool.name, call.agent_id)) if agent is None else None  # planned before
        refusal = plan.unavailable if plan is not None else self._policy.unavailable(tool, agent or call.agent_id)
        if refusal is not None:
            self._refuse(call, refusal.rule, refusal.reason)

    def check_policy(self, call: ToolCall) -> None:
        tool = call.tool
        if tool is None:  # gates run only for known tools; nothing to decide otherwise
            return
        agent = call.agent
        plan = self._policy_plans.get((tool.name, call.agent_id)) if agent is None else None
        decision = plan.settled if plan is not None else None  # no rule names this tool: ``decide``'s answer
        if decision is None or self._policy.session_grants:  # a run's own grants (a skill's) have a say too
            decision = self._policy.decide(
                tool, agent or call.agent_id, call.subjects, call.input, session=call.session_id
            )
        verdict = call.verdict = decision.verdict
        call.decided_by = decision.rule
        call.verdict_reason = decision.reason
        if verdict != "allow":
            if verdict == "deny":
                self._refuse(call, decision.rule, decision.reason)
            if verdict == "ask" and self._approval_gate is not None:
                self._approval_gate.wake()  # before this call's approval step: it asks from this call on
        if call.settings is not None and call.input is not None:  # only a tool's own settings refuse here
            own = tool.refusal(call.input, call.settings)
            if own is not None:
                self._refuse(call, *own)
        broker = self.broker
        if (broker.channel is not None or broker.forward or call.channel is not None) and not call.dry_run:
            # The broker counts calls on their way to the approval step (batching), so both steps that
            # tell it a call left that way walk from this call on.
            if self._approval_gate is not None and self._audit_sink is not None:
                self._approval_gate.wake()
                self._audit_sink.wake()
            self.broker.arrive(call.call_id)

    def _refuse(self, call: ToolCall, rule: str, reason: str) -> None:
        call.verdict, call.decided_by, call.verdict_reason = "deny", rule, reason
        raise ToolError(
            ErrorType.DENIED,
            f"Refused by policy: {reason}.",
            "Do not retry this call; choose another approach, or ask the user to change the policy.",
        )

    def check_rate(self, call: ToolCall) -> Awaitable[None] | None:
        limiter = self._limiter
        if limiter is None or call.tool is None or call.dry_run:
            return None  # nothing to wait for: the executor skips the await
        if not limiter.limits_for(call.tool, call.agent or call.agent_id):
            return None  # no bucket applies (worked out once per tool and caller)
        return self._acquire(limiter, call.tool, call)

    async def _acquire(self, limiter: RateLimiter, tool: AnyTool, call: ToolCall) -> None:
        refusal = await limiter.acquire(tool, call.agent or call.agent_id)
        if refusal is not None:
            call.verdict = "rate_limited"
            call.decided_by = refusal.limit.source
            raise over_limit(call.name, refusal)

    def check_approval(self, call: ToolCall) -> Awaitable[None] | None:
        if call.dry_run:
            return None
        self.broker.depart(call.call_id)
        if call.verdict != "ask":
            return None
        return self._ask(call)

    async def _ask(self, call: ToolCall) -> None:
        answer = await self.broker.decide(self.request_for(call), call.events or self.events, call.channel)
        call.approval = answer.how
        decision = answer.decision
        if decision.verdict == "deny":
            # A paused run's call was not refused: its row says it still asks (approval "paused"), and the
            # resumed run's row for the same call id says what the person decided.
            call.verdict = "ask" if answer.how == "paused" else "deny"
            raise _refused(answer)
        call.verdict = "allow"
        if decision.verdict == "allow_always":
            await self.remember(call, decision)

    def record(self, call: ToolCall, result: ToolResult) -> Awaitable[None] | None:
        self.broker.depart(call.call_id)
        audit = self._audit or self.audit
        return audit.record(call, result) if audit is not None else None

    # ------------------------------------------------------------------------------ approvals

    def request_for(self, call: ToolCall) -> ApprovalRequest:
        args: dict[str, Any] = call.input.model_dump(mode="json") if call.input is not None else call.raw_args
        return ApprovalRequest(
            id=call.call_id,
            tool=_shown(call),
            args=args,
            subjects=tuple(call.subjects),
            reason=call.verdict_reason,
            agent_id=call.agent_id,
            session_id=call.session_id,
            fingerprint=fingerprint(call.name, args),
            suggested=self.suggest(call),
        )

    def suggest(self, call: ToolCall) -> tuple[str, ...]:
        """The narrowest allowlist patterns that would have allowed this call: its exact subjects."""
        name = _shown(call)
        if call.tool is None or not call.subjects:
            return (name,)
        seen = view(kind_of(call.tool), call.subjects, self.workspace)
        return tuple(dict.fromkeys(f"{name}:{escape(unit)}" for unit in seen.units)) or (name,)

    def grant(self, tool: str, args: dict[str, Any], decision: ApprovalDecision | None = None) -> str:
        """Approve one future call of ``tool`` with exactly these (validated) arguments; returns its fingerprint."""
        key = fingerprint(tool, args)
        self.broker.grant(key, decision)
        return key

    async def remember(self, call: ToolCall, decision: ApprovalDecision) -> None:
        patterns = list(decision.patterns or self.suggest(call))
        caller = call.agent if call.agent is not None else self.policy.view(call.agent_id)
        agent = self.policy.lasting_scope(caller)
        try:
            self.policy.add_allow(patterns, "approvals.allow (allowed always)", agent)
            if not caller.configured:
                # A subagent: from its next call on too (its own rules were narrowed when it started).
                self.policy.add_allow(patterns, "approvals.allow (allowed always)", caller)
        except ValueError as exc:
            call.notes.append(f"The approval holds for this call only: {exc}")
            return
        if self.allowlist_file is None:
            return
        keys = ("agents", agent, "approvals", "allow") if agent else ("approvals", "allow")
        from toolrig.approvals.allowlist import add_patterns

        try:
            await anyio.to_thread.run_sync(add_patterns, self.allowlist_file, keys, patterns)
        except (OSError, ConfigError) as exc:
            log.warning("could not save %s to %s: %s", patterns, self.allowlist_file, exc)

    async def ask_in_call(
        self, tool: str, subject: str, reason: str, *, call_id: str = "", channel: ApprovalChannel | None = None
    ) -> bool:
        """``ToolContext.approvals.ask``: a tool asks mid-call (same channel, batching, timeout and fallback).

        The request has an id of its own (an answer to the call's approval never answers it) and names the
        asking call, so a channel that asks per call (MCP: the client that made it) puts it to the right person.
        """
        if self._policy.mode(None) == "off":
            return True
        args = {"subject": subject}
        request = ApprovalRequest(
            id=f"ask_{secrets.token_hex(6)}",
            tool=tool,
            args=args,
            call_id=call_id,
            subjects=(subject,),
            reason=reason,
            fingerprint=fingerprint(tool, args),
        )
        answer = await self.broker.decide(request, self.events, channel)
        return answer.decision.verdict != "deny"

    async def ask_user(
        self,
        questions: Sequence[Mapping[str, Any]],
        *,
        call_id: str,
        session_id: str | None,
        agent_id: str | None,
        events: EventSink | None = None,
        channel: ApprovalChannel | None = None,
    ) -> list[dict[str, Any]] | None:
        """``ask_user``: a question request through the same broker and channels as approvals.

        Its id is the asking call's id (a paused run finds it again by that), and it is asked whatever the
        approval mode: ``approvals.mode: off`` means nothing needs approval, not that nobody may be asked.
        No channel, no answer within the timeout, a failing channel or an empty answer: ``None`` (skipped),
        never the approval fallback (``allow`` cannot invent an answer). A form outside the allowed subset,
        or an answer that does not fit its form, is the asking tool's error (``ToolError``), saying why.
        """
        try:
            parsed = tuple(question_from(q) for q in questions)
        except FormError as exc:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"The form cannot be shown: {exc}.",
                "Send a flat form: an object of string, number, integer, boolean or enum fields (MCP elicitation).",
            ) from None
        args = {"questions": [question_json(q) for q in parsed]}
        request = ApprovalRequest(
            id=call_id or f"ask_{secrets.token_hex(6)}",
            tool="ask_user",
            args=args,
            reason="the agent asks you",
            agent_id=agent_id,
            session_id=session_id,
            fingerprint=fingerprint("ask_user", args),
            questions=parsed,
        )
        # The asking call's own sink: its front end hears the question (a chat stops its spinners first).
        answer = await self.broker.decide(request, events or self.events, channel)
        replies = answer.decision.answers
        if answer.decision.verdict == "deny" or replies is None or len(replies) != len(parsed):
            return None
        checked = [reply_from(reply_json(r), q) for r, q in zip(replies, parsed, strict=True)]
        why = refused(checked)
        if why is not None:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"The answer did not fit the form ({why}), so it was not used.",
                "Ask again, or decide yourself and say what you assumed.",
            )
        return [reply_json(r) for r in checked] if answered(checked) else None

    def refused_answer(self, refused: RefusedAnswer) -> None:
        """A remote channel refused an answer (forged, replayed, late...): one audit row says so."""
        audit = self.audit
        if audit is None:
            return
        request = refused.request
        try:
            audit.record_refusal(
                tool=request.tool if request is not None else "(unknown request)",
                call_id=request.id if request is not None else "",
                session=request.session_id if request is not None else None,
                agent=request.agent_id if request is not None else None,
                origin=refused.channel,
                rule=f"approvals.forward.{refused.channel}",
                approval=f"refused:{refused.why}",
                args={"sender": refused.sender, "fingerprint": request.fingerprint if request is not None else ""},
            )
        except Exception:  # the refusal itself stands; a full disk must not let the forged answer through
            log.exception("could not record a refused %s answer", refused.channel)

    def close(self) -> None:
        if self._audit is not None:
            self._audit.close()
        if self.limiter is not None:
            self.limiter.db.close()


class ToolApprovals:
    """The ``Approvals`` a ToolContext carries, answered through the rig's governance.

    ``through`` gives the same for one caller's channel (a run's): a tool's questions go where its call's do.
    """

    def __init__(self, governance: Governance, channel: ApprovalChannel | None = None) -> None:
        self.governance = governance
        self.channel = channel

    def through(self, channel: ApprovalChannel) -> ToolApprovals:
        return ToolApprovals(self.governance, channel)

    async def ask(self, tool: str, subject: str, reason: str, *, call_id: str = "") -> bool:
        return await self.governance.ask_in_call(tool, subject, reason, call_id=call_id, channel=self.channel)

    async def ask_user(
        self,
        questions: Sequence[Mapping[str, Any]],
        *,
        call_id: str = "",
        session_id: str | None = None,
        agent_id: str | None = None,
        events: EventSink | None = None,
    ) -> list[dict[str, Any]] | None:
        return await self.governance.ask_user(
            questions, call_id=call_id, session_id=session_id, agent_id=agent_id, events=events, channel=self.channel
        )


def _refused(answer: Answer) -> ToolError:
    reason = answer.decision.reason
    if answer.how == "deny":
        message = "The user did not approve this call" + (f": {reason}" if reason else ".")
    else:
        message = f"The call needed approval and was refused: {reason}."
    return ToolError(
        ErrorType.DENIED,
        message,
        "Do not repeat the same call. Take the user's reason into account, or ask the user what to do instead.",
    )


def _shown(call: ToolCall) -> str:
    """The name a person is asked about: an MCP tool as ``server/tool`` (config takes that spelling too).

    A profile's own name for a tool (``Bash``) is kept: that is the name the person's agent uses.
    """
    tool = call.tool
    if tool is not None and tool.display_name and call.name == tool.name:
        return tool.display_name
    return call.name
