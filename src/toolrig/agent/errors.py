"""Run failures of the agent: what stops a run, as opposed to a tool's error (which the model just reads).

``RunError.kind`` is stable so scripts can branch on it (``toolrig run --json`` prints it).
"""

from __future__ import annotations

from typing import Literal

RunErrorKind = Literal[
    "config",  # no model, no key, a bad setting
    "auth",  # the provider refused the key
    "rate_limited",  # 429 after the SDK's own retries
    "overloaded",  # 5xx / 529 after retries
    "timeout",  # a request or the whole run took too long
    "connection",  # the endpoint could not be reached
    "bad_request",  # the provider rejected the request (400, 404, 422)
    "provider",  # anything else the provider said
    "budget",  # the run spent more than max_budget_usd
    "state",  # a saved run state that cannot be resumed
]


class RunError(Exception):
    """A run could not go on; the session keeps everything up to the failure."""

    def __init__(self, kind: RunErrorKind, message: str) -> None:
        self.kind: RunErrorKind = kind
        self.message = message
        super().__init__(message)


class MissingKeyError(RunError):
    """No API key: the message is one line naming the variable to set."""

    def __init__(self, variable: str, provider: str) -> None:
        self.variable = variable
        super().__init__("config", f"no API key for {provider}: set the environment variable {variable}")
