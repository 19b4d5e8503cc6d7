"""Secrets out of what toolrig writes down: arguments and subjects are redacted before the audit log sees them.

Two nets: a value is dropped whole when its key is named like a secret (token, secret, password, key,
authorization, cookie, credential), and any string is scanned for things that look like credentials
(provider API keys, bearer tokens, JWTs, passwords in URLs, private key blocks, ``*_TOKEN=`` assignments).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

REDACTED = "[REDACTED]"
MAX_STRING = 1_000  # longer strings are cut in the log; the audit is a record of calls, not of content

_SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "pwd", "passphrase", "key", "apikey", "authorization", "auth",
     "cookie", "credential", "credentials", "privatekey", "accesskey", "sessionid", "bearer", "signature"}
)  # fmt: skip
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")

_VALUE_PATTERNS = [
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic, Stripe
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    r"\bglpat-[A-Za-z0-9_\-]{16,}",
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_\-]{30,}",
    r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}",  # JWT
    # a long token mixing upper case, lower case and digits (hex digests and words do not)
    r"\b(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*[A-Z])(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{32,}\b",
]
_KEEP_PREFIX_PATTERNS = [
    r"(?i)(\bauthorization\s*[:=]\s*)(?:(?:bearer|basic|token|digest)\s+)?[^\s,;\"']+",
    r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=\-]{8,}",
    r"(://[^/\s:@]*:)[^/\s@]+(?=@)",  # https://user:password@host
    r"(?i)([?&](?:api[_-]?key|key|token|access_token|auth|secret|password|sig|signature)=)[^&\s#\"']+",
    # NAME_TOKEN=value: environment variables are upper case, which keeps this off URL query strings
    r"((?<![\w&?])[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*\s*[=:]\s*)"
    r"(?:\"[^\"]*\"|'[^']*'|[^\s\"']+)",
    r"(?i)(--(?:password|token|api-key|secret)[= ])(?:\"[^\"]*\"|'[^']*'|\S+)",
]
_VALUES = re.compile("|".join(f"(?:{p})" for p in _VALUE_PATTERNS), re.DOTALL)
_PREFIXED = [re.compile(p) for p in _KEEP_PREFIX_PATTERNS]
_QUICK = re.compile(r"(?i)sk-|gh|glpat|xox|AKIA|ASIA|AIza|eyJ|BEGIN|auth|bearer|basic|://|[?&=:]|--|[A-Za-z0-9_\-]{32}")


@lru_cache(maxsize=4096)
def secret_key(name: str) -> bool:
    """``api_key``, ``apiKey``, ``X-Auth-Token``, ``password``: keys whose values are never written down."""
    words = [w.lower() for w in _WORD_SPLIT.split(_CAMEL.sub("_", name)) if w]
    if not words:
        return False
    joined = "".join(words)
    return any(w in _SECRET_WORDS for w in words) or joined in _SECRET_WORDS


def redact_text(text: str) -> str:
    if not _QUICK.search(text):
        return text
    text = _VALUES.sub(REDACTED, text)
    for pattern in _PREFIXED:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def redact(value: Any, *, limit: int = MAX_STRING) -> Any:
    """A copy of a JSON-like value with secrets replaced and long strings cut."""
    if isinstance(value, str):
        cut = redact_text(value)
        return cut if len(cut) <= limit else f"{cut[:limit]}… [{len(cut) - limit} more characters]"
    if isinstance(value, dict):
        return {
            key: REDACTED if isinstance(key, str) and secret_key(key) and item not in (None, "") else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [redact(item, limit=limit) for item in value]
    return value
