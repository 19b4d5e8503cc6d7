"""Approvals: the one home of asking a person, from the request to the answer.

``model`` (requests, decisions, fingerprints), ``channel`` (the one protocol every front end implements),
``broker`` (batching, single-use grants, timeout and fallback; each request asked through the channel its
call brought, else the Rig's), ``paused`` (a run that stops and is resumed with decisions), and the channels themselves:
``terminal``, ``mcp`` (elicitation and parked calls); the remote ones (Telegram, webhook) live in
``toolrig.remote`` and implement the same protocol. ``allowlist`` saves "allow always" answers.
"""

from __future__ import annotations

from toolrig.approvals.channel import ApprovalChannel, CallbackChannel
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest, Verdict, fingerprint

__all__ = ["ApprovalChannel", "ApprovalDecision", "ApprovalRequest", "CallbackChannel", "Verdict", "fingerprint"]
