from __future__ import annotations

import json
import re
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.policy.redact import REDACTED, TOKEN_SHAPES, redact, redact_text, secret_key
from toolrig.rig import Rig


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
        ("key", False),  # a lookup key (kv store, dict, sort), not a secret
        ("github_token", True),
        ("X-Api-Key", True),
        ("signing_key", True),
        ("primary_key", False),
        ("cache_key", False),
        ("api_key_env", False),
        ("token_url", False),
        ("password_file", False),
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


# ---------------------------------------------------------------- the corpus
# One fake sample per shape in TOKEN_SHAPES (shapes from gitleaks' and detect-secrets' rule lists), plus the
# named and per-command shapes of the hostile review's D14. Each is embedded in a line the way it reaches the
# audit log; the secret part must be gone, the words around it kept.
_B = "Zq9XwV8uT7sR6pQ5oN4mL3kJ2iH1gF0e"  # 32 mixed characters: the body of most fake tokens
_HEX = "0123456789abcdef" * 4
TOKENS = {
    "private key block": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",  # noqa: E501
    "anthropic / openai / stripe sk-": "sk-ant-api03-" + _B + "-AA",
    "stripe": "rk_live_" + "51Habcdefghijklmnop",
    "github": "github_pat_11AAAAAA0" + "abcdefghijklmnopqrst",
    "gitlab": "glptt-" + "abcdefghij0123456789",
    "slack": "xapp-1-A0123456789-0123456789-abcdef",
    "slack webhook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "aws access key id": "ASIA" + "Y34FZKBOKMUTVV7A",
    "gcp api key": "AIza" + "SyD-abcdefghijklmnopqrstuvwxyz01234",
    "gcp oauth secret": "GOCSPX-" + "abcdefghijklmnopqrstuvwxyz12",
    "google oauth access token": "ya29." + "a0AfH6SMBabcdefghijklmnop",
    "sendgrid": "SG." + "abcdefghijklmnopqrstuv" + "." + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    "npm": "npm_" + "abcdefghijklmnopqrstuvwxyz0123456789",
    "pypi": "pypi-AgEIcHlwaS5vcmc" + "abcdefghijklmnopqrstuvwxyz0123456789",
    "hashicorp vault": "hvs." + "CAESIabcdefghijklmnopqrstuvwxyz",
    "digitalocean": "dop_v1_" + _HEX,
    "shopify": "shpat_" + _HEX[:32],
    "hugging face": "hf_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "databricks": "dapi" + _HEX[:32],
    "doppler": "dp.pt." + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    "grafana": "glsa_" + "abcdefghijklmnopqrstuvwxyz012345_0a1b2c3d",
    "sentry": "sntrys_" + "eyJpYXQiOjE2ODQ5NjI0NzQuMjU2NTQ5",
    "linear": "lin_api_" + "abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "postman": "PMAK-" + _HEX[:24] + "-" + _HEX[:34],
    "new relic": "NRAK-" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0",
    "pulumi": "pul-" + _HEX[:40],
    "planetscale": "pscale_tkn_" + "abcdefghijklmnopqrstuvwxyz0123456789ABC",
    "square": "sq0atp-" + "abcdefghijklmnopqrstuv",
    "twilio": "SK" + _HEX[:32],
    "mailchimp": _HEX[:32] + "-us12",
    "telegram bot": "123456789:AA" + "abcdefghijklmnopqrstuvwxyz0123456789A",
    "artifactory": "AKCp" + "8" + "abcdefghijklmnopqrstuvwxyz" * 3,
    "atlassian": "ATATT3" + "xFfGF0" + "abcdefghijklmnopqrstuvwxyz" * 3,
    "1password": "A3-ASWWYB-798JRYLJVD4-23DC2-86TVM-H43EB",
    "age": "AGE-SECRET-KEY-1" + "QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQQPZRY9X8GF2TVDW0S3JN54",
    "azure storage": "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "abcdEFGH0123+/" * 4 + "==",
    "azure ad client secret": "abc8Q~" + "abcdefghijklmnopqrstuvwxyz0123456",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk",
    "high entropy": "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF",
}


def test_every_shape_in_the_table_has_a_sample_in_the_corpus() -> None:
    assert {name for name, _ in TOKEN_SHAPES} == set(TOKENS)


@pytest.mark.parametrize("name", sorted(TOKENS))
@pytest.mark.parametrize("frame", ["{}", "echo '{}' | tool", "value={} next", '{{"v": "{}"}}', "a\n{}\nb"])
def test_a_token_of_every_known_shape_is_removed_wherever_it_sits(name: str, frame: str) -> None:
    secret = TOKENS[name]
    core = secret.split("AccountKey=")[-1].splitlines()[1] if "\n" in secret else secret.split("AccountKey=")[-1]
    out = redact_text(frame.format(secret))
    assert core not in out and REDACTED in out


# (line as the model sent it, the secret inside it): the named and per-command shapes (review D14 and more)
NAMED = [
    ("curl -H 'X-Api-Key: LEAK01' https://api.example.com", "LEAK01"),
    ('curl -H "X-Auth-Token: LEAK31" https://api.example.com', "LEAK31"),
    ("mysql -u root -pLEAK02 db", "LEAK02"),
    ("mysqldump --user=root -p'LEAK32' db > d.sql", "LEAK32"),
    ("curl -u admin:LEAK03 https://x", "LEAK03"),
    ("curl --user admin:LEAK33 https://x", "LEAK33"),
    ("sshpass -p LEAK05 ssh host", "LEAK05"),
    ("sshpass -pLEAK35 ssh host", "LEAK35"),
    ("https://none.invalid/cb?client_secret=LEAK11&code=LEAK12", "LEAK11"),
    ("https://none.invalid/cb?client_secret=LEAK11&code=LEAK12", "LEAK12"),
    ("https://none.invalid/o?X-Amz-Credential=x&X-Amz-Signature=LEAK18", "LEAK18"),
    ("https://storage.googleapis.com/b/o?X-Goog-Signature=LEAK19&X-Goog-Date=1", "LEAK19"),
    ("https://maps.example/api?key=LEAK20&q=x", "LEAK20"),
    ("https://x.io/cb#access_token=LEAK21&state=s", "LEAK21"),
    ("Cookie: session=LEAK22; theme=dark", "LEAK22"),
    ("Cookie: theme=dark; session=LEAK23", "LEAK23"),
    ("Authorization: Basic LEAK24LEAK24", "LEAK24"),
    ('{"password": "LEAK25"}', "LEAK25"),
    ("db_password = 'LEAK26'", "LEAK26"),
    ("psql postgresql://app:LEAK27@db/app", "LEAK27"),
    ("tool --client-secret LEAK28 --verbose", "LEAK28"),
    ("tool --api-key=LEAK29", "LEAK29"),
    ("export STRIPE_SECRET_KEY=LEAK30", "LEAK30"),
]


@pytest.mark.parametrize(("line", "secret"), NAMED)
def test_a_secret_named_by_its_parameter_header_flag_or_command_is_removed(line: str, secret: str) -> None:
    assert secret not in redact_text(line)


# near misses: look like the shapes above, are not secrets, and must reach the log unchanged
NEAR_MISSES = [
    "git checkout 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
    "sha256:" + _HEX,
    "sort -u names.txt",
    "mkdir -p build/out && cp -r a b",
    "mysql_config --libs",
    "ssh -p 2222 host",
    "curl https://example.com/search?q=cats&page=2&sort=asc",
    "curl https://example.com/?keyword=x&monkey=y&author=z",
    "max_tokens: 512",
    "api_key_env: OPENAI_API_KEY",
    "token_url: https://auth.example.com/token",
    "primary_key = id",
    "the author said: hello",
    "see src/toolrig/policy/redact.py:42",
    "ask-the-user-for-a-passkey-is-not-this",
    "python -m pytest -k key_value",
    "AKIAIOSFODNN7EXAMPL",  # one character short of an AWS key id
    "sk-short",
    "ghp_tooShort",
    "SKELETON_CREW_ROSTER_FOR_THE_NEXT_SEASON",
    "hf_hub_download",
    "npm_config_cache",
    "https://docs.example.com/page#section-2",
]


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_a_near_miss_is_kept_word_for_word(line: str) -> None:
    assert redact_text(line) == line


def test_a_kv_key_is_logged_and_a_value_stored_under_a_secret_name_is_not() -> None:
    assert redact({"key": "project/status", "value": "green"}) == {"key": "project/status", "value": "green"}
    assert redact({"key": "github_token", "value": "LEAK24"}) == {"key": "github_token", "value": REDACTED}
    assert redact({"name": "Authorization", "value": "x"}) == {"name": "Authorization", "value": REDACTED}


def test_the_audit_log_of_a_real_rig_holds_none_of_the_review_d14_secrets(tmp_path) -> None:
    (tmp_path / "ws").mkdir()
    rig = Rig(tmp_path / "ws")
    try:
        for line, _ in NAMED[:11]:
            # echoed, not run (no network): the log records the command line whatever it does; the URL cases
            # reach the audit through the same redaction of arguments as a fetch_url call's `url`
            rig.call_sync("run_command", {"command": "echo " + shlex.quote(line), "timeout_seconds": 5})
        rig.call_sync("key_value_set", {"key": "github_token", "value": "LEAK24"})
        rig.call_sync("key_value_set", {"key": "project/status", "value": "green"})
        rows = [row.args for row in rig.governance.audit.query(limit=100)]
    finally:
        rig.close()
    text = json.dumps(rows)
    assert re.findall(r"LEAK\d\d", text) == []
    assert "project/status" in text and "green" in text and "github_token" in text


def test_a_secret_straddling_the_cut_is_redacted_not_half_kept() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "x" * 990 + " " + secret + " " + "y" * 5000
    out = redact({"content": text})["content"]
    assert "ghp_" not in out and "A1b2" not in out
    assert out.endswith(f"[{len(text) - 1000} more characters]")
