from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.policy.redact import REDACTED, redact, redact_text, secret_key


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("apiKey", True),
        ("X-Auth-Token", True),
        ("password", True),
        ("client_secret", True),
        ("Authorization", True),
        ("cookie", True),
        ("aws_access_key_id", True),
        ("key", True),
        ("max_tokens", False),
        ("keyword", False),
        ("monkey", False),
        ("path", False),
        ("author", False),
    ],
)
def test_keys_named_like_secrets(key: str, secret: bool) -> None:
    assert secret_key(key) is secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("token sk-ant-api03-AbCdEfGhIjKlMnOp done", "token [REDACTED] done"),
        ("sk-proj-abcdefghijklmnopqrstu", REDACTED),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123", REDACTED),
        ("AKIAIOSFODNN7EXAMPLE", REDACTED),
        ("xoxb-1234567890-abcdefghij", REDACTED),
        ("Authorization: Bearer abc.def.ghi", "Authorization: [REDACTED]"),
        ("-H 'authorization: token abcdef123456'", "-H 'authorization: [REDACTED]'"),
        ("curl https://bob:hunter2@example.com/x", "curl https://bob:[REDACTED]@example.com/x"),
        ("https://x.io/?q=cats&api_key=abc123&page=2", "https://x.io/?q=cats&api_key=[REDACTED]&page=2"),
        ("GITHUB_TOKEN=ghx123 make release", "GITHUB_TOKEN=[REDACTED] make release"),
        ("export DB_PASSWORD='two words'", "export DB_PASSWORD=[REDACTED]"),
        ("mysql --password='p w' db", "mysql --password=[REDACTED] db"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk", REDACTED),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", REDACTED),
        ("aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF", REDACTED),
        # not secrets: left alone
        (
            "git checkout 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
            "git checkout 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
        ),
        ("sqrt(16) + pi", "sqrt(16) + pi"),
        ("the author said: hello", "the author said: hello"),
        ("https://example.com/path?page=2", "https://example.com/path?page=2"),
    ],
)
def test_values_that_look_like_credentials(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_nested_arguments_are_redacted_by_key_and_by_value() -> None:
    args = {
        "url": "https://api.example.com",
        "headers": {"Authorization": "Bearer xyz", "Accept": "json", "X-Api-Key": ""},
        "body": [{"password": "pw", "note": "sk-live-0123456789abcdefgh"}],
        "limit": 5,
    }
    assert redact(args) == {
        "url": "https://api.example.com",
        "headers": {"Authorization": REDACTED, "Accept": "json", "X-Api-Key": ""},
        "body": [{"password": REDACTED, "note": REDACTED}],
        "limit": 5,
    }
    assert args["headers"]["Authorization"] == "Bearer xyz"  # the caller's value is untouched


def test_long_strings_are_cut() -> None:
    out = redact({"content": "x" * 5000})["content"]
    assert len(out) < 1100 and out.endswith("[4000 more characters]")


_PREFIXES = ["sk-ant-api03-", "sk-proj-", "ghp_", "github_pat_", "glpat-", "xoxp-", "AIza"]


@settings(deadline=None)  # timing on a shared CI machine is not the property under test
@given(
    prefix=st.sampled_from(_PREFIXES),
    body=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=36, max_size=60),
    before=st.text(alphabet=" abcdefgh:=,;'\"({[", max_size=20).map(lambda t: t + " "),  # keys start a word
    after=st.text(alphabet=" abcdefgh:,;'\")}]", max_size=20),
)
def test_a_provider_key_anywhere_in_a_string_is_removed(prefix: str, body: str, before: str, after: str) -> None:
    secret = prefix + body
    out = redact({"text": before + secret + after, "list": [secret]})
    assert body not in out["text"] and body not in out["list"][0]


@settings(deadline=None)  # timing on a shared CI machine is not the property under test
@given(st.dictionaries(st.sampled_from(["token", "secret", "password", "apiKey", "auth"]), st.text(min_size=1)))
def test_a_value_under_a_secret_key_is_never_kept(data: dict[str, str]) -> None:
    assert set(redact(data).values()) <= {REDACTED}
