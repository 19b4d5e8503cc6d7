"""Secrets out of what toolrig writes down: arguments and subjects are redacted before the audit log sees them.

Three nets, because a secret reaches the log in three shapes:

* **by its own shape**: a provider token is recognisable alone (``ghp_...``, ``AKIA...``, a JWT, a private key
  block). The table below is our own, built from the rule lists that gitleaks and detect-secrets ship (their
  prefixes and lengths are public facts about the providers' formats);
* **by the name it is given**: ``password=...``, ``X-Api-Key: ...``, ``?client_secret=...``, ``--token ...``,
  ``{"api_key": ...}``, ``{"key": "github_token", "value": ...}`` (a secret stored under a name that says so);
* **by the command that takes it**: ``curl -u user:PASS``, ``docker login -p PASS``, ``htpasswd -b F U PASS``,
  ``aws configure set aws_secret_access_key V``: a table of programs and their documented password arguments
  (``cli_secrets``), since a short flag is a password to one program and a port to the next.

What is *not* a secret matters as much: a bare ``key`` names a lookup key (kv store, dict, sort), and
``max_tokens``, ``api_key_env`` or ``token_url`` name settings about secrets, not secrets. Redacting those made
the audit log useless for the calls it exists to record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from toolrig.policy.cli_secrets import redact_commands

REDACTED = "[REDACTED]"
MAX_STRING = 1_000  # longer strings are cut in the log; the audit is a record of calls, not of content
_MARGIN = 512  # scanned beyond the cut: longer than any token shape below

# A name is secret-looking when one of its words is one of these ...
_SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "pwd", "pass", "passphrase", "apikey", "authorization", "auth",
     "cookie", "credential", "credentials", "creds", "privatekey", "accesskey", "secretkey", "sessionid",
     "bearer", "signature", "sig", "otp", "dsn", "pw", "sshpass", "storepass", "keypass", "jsessionid",
     "phpsessid"}
)  # fmt: skip
# ... or when one of its words ends with one of these (``PGPASSWORD``, ``rootpassword``, ``accesstoken``).
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "sessionid", "sessid", "storepass", "keypass")
# ... or when it says ``key`` qualified by another word (``api_key``, ``X-Api-Key``, ``signing_key``), unless
# that word makes it a lookup key (``primary_key``, ``sort_key``, ``key_name``, ``cache_key``).
_LOOKUP_KEY_WORDS = frozenset(
    {"primary", "foreign", "sort", "partition", "public", "pub", "hot", "idx", "index", "natural", "schema",
     "sequence", "bucket", "cache", "dict", "map", "lookup", "row", "shard", "routing", "group", "hash", "name",
     "alias", "board", "code", "press", "pressed", "up", "down", "left", "right", "word", "stroke", "frame",
     "field", "column", "prefix", "pattern", "order", "range", "kv", "dedup", "dedupe", "idempotency", "cursor",
     "event", "binding", "bindings", "mapping", "object", "item", "entry", "composite", "unique", "memory",
     "path", "file", "type", "max", "min", "first", "last", "next", "prev", "start", "end", "value", "values"}
)  # fmt: skip
# A trailing word that makes the name *about* a secret rather than the secret (``api_key_env``, ``token_url``).
_ABOUT_WORDS = frozenset(
    {"env", "file", "path", "name", "names", "length", "size", "type", "url", "uri", "endpoint", "count", "limit",
     "limits", "hint", "format", "expiry", "expires", "ttl", "header", "field", "kind", "id_env", "prompt"}
)  # fmt: skip
# Query parameters that carry a secret although the name alone would not say so in a dict.
_SECRET_QUERY_NAMES = frozenset({"key", "code", "sig", "otp", "pass", "pw"})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")


@lru_cache(maxsize=4096)
def secret_key(name: str) -> bool:
    """``api_key``, ``apiKey``, ``X-Auth-Token``, ``password``: names whose values are never written down."""
    words = [w.lower() for w in _WORD_SPLIT.split(_CAMEL.sub("_", name)) if w]
    if not words:
        return False
    if len(words) > 1 and words[-1] in _ABOUT_WORDS:
        return False
    if any(w in _SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words) or "".join(words) in _SECRET_WORDS:
        return True
    if "key" in words or "keys" in words:
        others = [w for w in words if w not in ("key", "keys")]
        return bool(others) and not any(w in _LOOKUP_KEY_WORDS for w in others)
    return False


# ---------------------------------------------------------------- tokens recognisable by their own shape
# (name, pattern). Sources of the shapes: gitleaks config/gitleaks.toml and detect-secrets' plugins; the
# patterns are written here, shorter and looser on length so that truncated or test tokens are caught too.
TOKEN_SHAPES: tuple[tuple[str, str], ...] = (
    ("private key block",
     r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)"),
    ("anthropic / openai / stripe sk-",
     r"\bsk-(?:ant-(?:api|admin)\d\d-|proj-|svcacct-|admin-|live-|test-)?[A-Za-z0-9_\-]{16,}"),
    ("stripe", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("github", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("gitlab", r"\bgl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|agent|soat)-[A-Za-z0-9_\-]{16,}"),
    ("slack", r"\bx(?:ox[abposre]|app)-[A-Za-z0-9\-]{10,}"),
    ("slack webhook", r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}"),
    ("aws access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}\b"),
    ("gcp api key", r"\bAIza[0-9A-Za-z_\-]{30,}"),
    ("gcp oauth secret", r"\bGOCSPX-[A-Za-z0-9_\-]{20,}"),
    ("google oauth access token", r"\bya29\.[A-Za-z0-9_\-]{20,}"),
    ("sendgrid", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("npm", r"\bnpm_[A-Za-z0-9]{30,}"),
    ("pypi", r"\bpypi-AgE[A-Za-z0-9_\-]{40,}"),
    ("hashicorp vault", r"\bhv[sbr]\.[A-Za-z0-9_\-]{20,}"),
    ("digitalocean", r"\bdo[opr]_v1_[a-f0-9]{32,}"),
    ("shopify", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("hugging face", r"\bhf_[A-Za-z0-9]{30,}"),
    ("databricks", r"\bdapi[a-f0-9]{32}(?:-\d)?"),
    ("doppler", r"\bdp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{30,}"),
    ("grafana", r"\bgl(?:sa|c)_[A-Za-z0-9_+/=\-]{30,}"),
    ("sentry", r"\bsntr[ysu]_[A-Za-z0-9_+/=\-]{30,}"),
    ("linear", r"\blin_(?:api|oauth)_[A-Za-z0-9]{30,}"),
    ("postman", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("new relic", r"\bNR(?:AK|AA|II|JS)-[A-Z0-9]{20,}"),
    ("pulumi", r"\bpul-[a-f0-9]{40}"),
    ("planetscale", r"\bpscale_(?:tkn|oauth|pw)_[A-Za-z0-9_\-=.]{30,}"),
    ("square", r"\b(?:EAAA|sq0(?:atp|csp))-?[A-Za-z0-9_\-]{20,}"),
    ("twilio", r"\bSK[0-9a-f]{32}\b"),
    ("mailchimp", r"\b[0-9a-f]{32}-us\d{1,2}\b"),
    ("telegram bot", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{32,}"),
    ("artifactory", r"\b(?:AKCp[A-Za-z0-9]{60,}|cmVmd[A-Za-z0-9]{50,})"),
    ("atlassian", r"\bATATT3[A-Za-z0-9_\-=]{60,}"),
    ("1password", r"\b(?:ops_eyJ[A-Za-z0-9+/]{100,}={0,3}|A3-[A-Z0-9]{6}-[A-Z0-9-]{20,})"),
    ("age", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("azure storage", r"(?<=(?i:AccountKey)=)[A-Za-z0-9+/=]{40,}"),
    ("azure ad client secret", r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
    # a long token mixing upper case, lower case and digits (hex digests, words and paths do not)
    ("high entropy",
     r"\b(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*[A-Z])(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{32,}\b"),
)  # fmt: skip
# Literal keywords (as gitleaks does): a shape's pattern runs only on text holding one of them, so a call's
# arguments pay for the few shapes that could be there, not for forty alternatives at every position.
_KEYWORDS: dict[str, tuple[str, ...]] = {
    "private key block": ("PRIVATE KEY",), "anthropic / openai / stripe sk-": ("sk-",), "stripe": ("_live_", "_test_"),
    "github": ("gh", "github_pat_"), "gitlab": ("gl",), "slack": ("xox", "xapp-"),
    "slack webhook": ("hooks.slack.com",),
    "aws access key id": ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"), "gcp api key": ("AIza",),
    "gcp oauth secret": ("GOCSPX-",), "google oauth access token": ("ya29.",), "sendgrid": ("SG.",),
    "npm": ("npm_",), "pypi": ("pypi-",), "hashicorp vault": ("hvs.", "hvb.", "hvr."), "digitalocean": ("_v1_",),
    "shopify": ("shp",), "hugging face": ("hf_",), "databricks": ("dapi",), "doppler": ("dp.",), "grafana": ("gl",),
    "sentry": ("sntr",), "linear": ("lin_",), "postman": ("PMAK-",), "new relic": ("NR",), "pulumi": ("pul-",),
    "planetscale": ("pscale_",), "square": ("EAAA", "sq0"), "twilio": ("SK",), "mailchimp": ("-us",),
    "telegram bot": (":AA",), "artifactory": ("AKCp", "cmVmd"), "atlassian": ("ATATT3",), "1password": ("ops_", "A3-"),
    "age": ("AGE-SECRET-KEY",), "azure storage": ("AccountKey", "accountkey", "ACCOUNTKEY"),
    "azure ad client secret": ("Q~",), "jwt": ("eyJ",), "high entropy": (),
}  # fmt: skip


@cache
def _shapes() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """The shapes compiled, on the first text that passes ``_QUICK``: most calls' arguments never do."""
    return tuple((re.compile(pattern, re.DOTALL), _KEYWORDS[name]) for name, pattern in TOKEN_SHAPES)


# ---------------------------------------------------------------- secrets recognisable by their name or command
_VALUE = r"(?:\"[^\"]*\"|'[^']*'|[^\s\"',;&|)]+)"
_SHELL_WORD = r"(?:\"[^\"]*\"|'[^']*'|[^\s\"'])+"  # one shell word, quotes and all


@cache
def _named() -> tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...]:
    """Each pattern with its replacement, compiled on first use like ``_shapes``."""
    found: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], bool]], ...] = (
        # ?client_secret=...&code=... and X-Amz-Signature=... in URLs (presigned, OAuth callbacks)
        (
            re.compile(r"([?&;#](?P<name>[A-Za-z0-9_.\-\[\]]+)=)[^&\s#\"'<>]+"),
            lambda m: secret_key(m["name"]) or m["name"].lower() in _SECRET_QUERY_NAMES,
        ),
        # Authorization / Cookie headers: the whole value, scheme included, up to the end of the quote or line
        (
            re.compile(r"(\b(?P<name>(?i:(?:proxy-)?authorization|(?:set-)?cookie))\s*[:=]\s*)[^\n\"'\\]+"),
            lambda m: True,
        ),
        # X-Api-Key: v, password=v, "token": "v", DB_PASSWORD='v w', --api-key v, --token=v
        (
            re.compile(
                r"((?<![\w?&;.\-])(?P<dash>--?)?[\"']?(?P<name>[A-Za-z_][\w.\-]*+)[\"']?(?(dash)(?:\s*=\s*|\s+)|\s*[:=]\s*)"
                r"(?:(?i:bearer|basic|token|digest)\s+)?)" + _VALUE
            ),
            lambda m: not m["name"].lower().startswith("no-") and secret_key(m["name"]),
        ),
        # Bearer tokens wherever they appear
        (re.compile(r"(\b(?i:bearer|basic)\s+)[A-Za-z0-9._~+/=\-]{8,}"), lambda m: True),
        # https://user:password@host
        (re.compile(r"(://[^/\s:@]*:)[^/\s@]+(?=@)"), lambda m: True),
        # curl -u user:pass, --user, --proxy-user, -U
        (re.compile(r"((?:^|\s)(?:-u|-U|--user|--proxy-user)(?:\s+|=)[\"']?[^\s:\"']*:)[^\s\"']+"), lambda m: True),
        # mysql -pPASS (the MySQL client family takes the password glued to -p)
        (re.compile(r"(\b(?:mysql\w*|mariadb[\w-]*)\b[^\n;|&]*?\s-p)(?=\S)" + _SHELL_WORD), lambda m: True),
        # sshpass -p PASS / -pPASS
        (re.compile(r"(\bsshpass\b[^\n;|&]*?\s-p\s*)" + _SHELL_WORD), lambda m: True),
    )
    return tuple((pattern, _prefix_only(check)) for pattern, check in found)


_QUICK = re.compile(
    r"(?i)sk-|_live_|_test_|gh|gl|xox|xapp|AKIA|ASIA|A3T|AIza|GOCSPX|ya29|SG\.|npm_|pypi-|hv[sbr]\.|_v1_|shp|hf_|dapi|"
    r"dp\.|sntr|lin_|PMAK|NR|pul-|pscale|sq0|EAAA|SK|-us|AKCp|cmVmd|ATATT|ops_|A3-|AGE-|Q~|eyJ|BEGIN|auth|bearer|"
    r"basic|cookie|://|[?&=:]|-[-pPuU]|[A-Za-z0-9_\-]{32}"
)


def _prefix_only(check: Callable[[re.Match[str]], bool]) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        if check(m):
            return m.group(1) + REDACTED
        # not a secret name, but its value may hold one (``-H 'X-Api-Key: ...'``): look inside it
        return m.group(1) + redact_text(m.group(0)[len(m.group(1)) :])

    return replace


# the generic ``name: value`` net runs only where a secret word could name something
_NAME_WORDS = re.compile(r"(?i)tok|secret|pass|pwd|pw|auth|key|cookie|cred|sig|otp|dsn|bearer|sess")
_GENERIC = 2  # index of that net in _named()


def redact_text(text: str) -> str:
    text = redact_commands(text, secret_key)
    if not _QUICK.search(text):
        return text
    for pattern, keywords in _shapes():
        if not keywords or any(k in text for k in keywords):
            text = pattern.sub(REDACTED, text)
    has_words = _NAME_WORDS.search(text) is not None
    for index, (pattern, replace) in enumerate(_named()):
        if index != _GENERIC or has_words:
            text = pattern.sub(replace, text)
    return text


# Dicts that name a secret in one field and hold it in another: the kv store's {"key", "value"}, HTTP header
# lists ({"name": "Authorization", "value": ...}), environment lists ({"name": "API_TOKEN", "value": ...}).
_NAME_FIELDS = ("key", "name")
_VALUE_FIELDS = frozenset({"value", "values", "val", "data", "content"})


def _names_a_secret(value: dict[Any, Any]) -> bool:
    return any(isinstance(value.get(f), str) and secret_key(value[f]) for f in _NAME_FIELDS)


def redact(value: Any, *, limit: int = MAX_STRING) -> Any:
    """A copy of a JSON-like value with secrets replaced and long strings cut."""
    if isinstance(value, str):
        # Only what is kept is scanned (plus a margin, so a secret straddling the cut is still seen whole):
        # a 1 MB write_file content costs the audit the same as a short one.
        cut = redact_text(value[: limit + _MARGIN])
        if len(value) <= limit + _MARGIN and len(cut) <= limit:
            return cut
        return f"{cut[:limit]}… [{len(value) - limit} more characters]"
    if isinstance(value, dict):
        named = _names_a_secret(value)
        return {
            key: REDACTED
            if isinstance(key, str) and (secret_key(key) or (named and key in _VALUE_FIELDS)) and item not in (None, "")
            else redact(item, limit=limit)
            for key, item in value.items()
        }
    if isinstance(value, int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [redact(item, limit=limit) for item in value]
    return value
