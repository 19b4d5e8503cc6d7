"""What is asked and what was answered: requests, decisions and the fingerprint that binds them.

Policy decides *whether* a call needs a person; a channel (``channel.py``) finds out *what the person
said*. Every request carries a fingerprint of the exact tool and arguments, and an answer given with a
fingerprint holds only for the request that has it, so no answer can approve a different call.

A request with ``questions`` is a question to the person (``ask_user``), routed exactly like an approval:
its decision carries ``answers`` (one ``Reply`` per question), or no answers at all when it was skipped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["allow_once", "allow_always", "deny"]


def fingerprint(tool: str, args: dict[str, Any]) -> str:
    """A stable hash of a tool and its exact arguments, so an approval cannot be reused for another call."""
    canonical = json.dumps({"tool": tool, "args": args}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Choice:
    label: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    """One question for a person; no options means free text, a ``form`` means a form to fill in.

    ``form`` is a checked flat form (``toolrig.forms.check_form``: MCP elicitation's subset of JSON Schema);
    its answer is ``Reply.values``, never picked labels or free text.
    """

    question: str
    header: str = ""
    options: tuple[Choice, ...] = ()
    allow_multiple: bool = False
    allow_other_text: bool = False
    form: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def free_text(self) -> bool:
        return self.form is None and (not self.options or self.allow_other_text)


@dataclass(frozen=True, slots=True)
class Reply:
    """The person's answer to one question: the labels picked, and/or their own words, or a form's values.

    ``error`` says why an answer was refused (values that do not fit the form): the asking tool is told.
    """

    selected: tuple[str, ...] = ()
    other_text: str | None = None
    values: dict[str, Any] | None = field(default=None, hash=False)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    id: str
    tool: str
    args: dict[str, Any]
    subjects: tuple[str, ...] = ()
    reason: str = ""
    agent_id: str | None = None
    session_id: str | None = None
    fingerprint: str = ""
    suggested: tuple[str, ...] = ()  # allowlist patterns that "allow always" would save, narrowest first
    questions: tuple[Question, ...] = ()  # set: this is a question to the person, not an approval
    call_id: str = ""  # a tool's own mid-call question: the call asking (its id is the question's own)

    @property
    def kind(self) -> Literal["approval", "question"]:
        return "question" if self.questions else "approval"


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    verdict: Verdict
    reason: str = ""
    patterns: tuple[str, ...] = field(default=())  # for allow_always: what to add to the allowlist
    fingerprint: str = ""  # when set, the answer holds only for the request with this fingerprint
    answers: tuple[Reply, ...] | None = None  # a question's answers; None: skipped (or an approval)
    by_default: bool = False  # nobody answered: a channel's stand-in (its fallback), which a person's answer beats
    how: str = ""  # the audit row's approval when the verdict would mislead: a paused run's stand-in is "paused"


@dataclass(frozen=True, slots=True)
class RefusedAnswer:
    """An answer a remote channel refused (forged, replayed, late, badly signed...), for the audit log."""

    channel: str  # telegram | webhook
    why: str
    request: ApprovalRequest | None  # the request it claimed to answer, when known
    sender: str = ""
