from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import HttpServer, SmtpServer, refusing_port
from toolrig import Rig
from toolrig.result import ToolResult


def mailer(workspace: Path, server: SmtpServer, security: str, **settings: Any) -> Rig:
    config = {
        "host": "127.0.0.1",
        "port": server.port,
        "security": security,
        "from_address": "bot@toolrig.test",
        "allowed_recipients": ["*@example.com", "boss@corp.test"],
        "username": "agent",
        "password_env": "TEST_SMTP_PASSWORD",
        "ca_file": server.ca_file,
        **settings,
    }
    return Rig(workspace, config={"tool_config": {"send_email": config}})


def send(rig: Rig, **args: Any) -> ToolResult:
    args.setdefault("to", ["alice@example.com"])
    args.setdefault("subject", "Build finished")
    args.setdefault("body", "All 120 tests passed.\n")
    return rig.call_sync("send_email", args)


@pytest.fixture(autouse=True)
def smtp_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_SMTP_PASSWORD", "s3cret")


@pytest.mark.parametrize("security", ["none", "starttls", "tls"])
def test_mail_is_delivered_over_each_transport_with_auth(
    workspace: Path, smtp_servers: dict[str, SmtpServer], security: str
) -> None:
    server = smtp_servers[security]
    before = len(server.mailbox.envelopes)
    result = send(mailer(workspace, server, security), to=["alice@example.com", "boss@corp.test"])
    assert not result.is_error, result.message
    envelope = server.mailbox.envelopes[before]
    assert envelope.mail_from == "bot@toolrig.test"
    assert envelope.rcpt_tos == ["alice@example.com", "boss@corp.test"]
    message = server.mailbox.messages()[before]
    assert message["Subject"] == "Build finished"
    assert message["From"] == "bot@toolrig.test"
    assert message["To"] == "alice@example.com, boss@corp.test"
    assert message["Message-ID"] == result.output["message_id"]
    assert message["Date"]
    assert message.get_content_type() == "text/plain"
    assert message.get_content() == "All 120 tests passed.\n"


def test_html_mail_is_multipart_alternative_with_a_plain_copy(
    workspace: Path, smtp_servers: dict[str, SmtpServer]
) -> None:
    server = smtp_servers["starttls"]
    before = len(server.mailbox.envelopes)
    html = "<h1>Report</h1><p>All <b>green</b>.</p><script>x()</script>"
    result = send(mailer(workspace, server, "starttls"), body=html, html=True)
    assert not result.is_error, result
    message = server.mailbox.messages()[before]
    assert message.get_content_type() == "multipart/alternative"
    plain, rich = message.iter_parts()
    assert plain.get_content_type() == "text/plain" and "Report" in plain.get_content()
    assert "x()" not in plain.get_content()
    assert rich.get_content_type() == "text/html" and rich.get_content() == html + "\n"


def test_non_ascii_subjects_and_bodies_survive(workspace: Path, smtp_servers: dict[str, SmtpServer]) -> None:
    server = smtp_servers["tls"]
    before = len(server.mailbox.envelopes)
    send(mailer(workspace, server, "tls"), subject="Déploiement réussi ✓", body="Größe: 42 – fertig")
    message = server.mailbox.messages()[before]
    assert message["Subject"] == "Déploiement réussi ✓"
    assert message.get_content().strip() == "Größe: 42 – fertig"


def test_a_wrong_password_is_unavailable_with_the_reason(
    workspace: Path, smtp_servers: dict[str, SmtpServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_SMTP_PASSWORD", "wrong")
    result = send(mailer(workspace, smtp_servers["tls"], "tls"))
    assert result.error_type == "unavailable" and "login" in result.message


def test_a_missing_password_variable_is_a_clear_error(workspace: Path, smtp_servers: dict[str, SmtpServer]) -> None:
    result = send(mailer(workspace, smtp_servers["tls"], "tls", password_env="TEST_UNSET_PASSWORD_VAR"))
    assert result.error_type == "unavailable" and "TEST_UNSET_PASSWORD_VAR" in result.message


def test_a_server_certificate_from_an_unknown_ca_is_refused(
    workspace: Path, smtp_servers: dict[str, SmtpServer]
) -> None:
    result = send(mailer(workspace, smtp_servers["tls"], "tls", ca_file=None))
    assert result.error_type == "unavailable"


def test_an_unconfigured_mailer_says_so(workspace: Path) -> None:
    config = {"tool_config": {"send_email": {"allowed_recipients": ["*@example.com"]}}}
    result = send(Rig(workspace, config=config))
    assert result.error_type == "unavailable" and "not configured" in result.message


def test_an_unreachable_server_is_unavailable(workspace: Path, smtp_servers: dict[str, SmtpServer]) -> None:
    with refusing_port() as port:
        result = send(mailer(workspace, smtp_servers["none"], "none", port=port, timeout_seconds=5))
    assert result.error_type == "unavailable"


def test_the_rate_limit_counts_messages_per_window(workspace: Path, smtp_servers: dict[str, SmtpServer]) -> None:
    rig = mailer(workspace, smtp_servers["none"], "none", max_messages=2, window_seconds=3600)
    assert not send(rig).is_error
    assert not send(rig).is_error
    third = send(rig)
    assert third.error_type == "rate_limited" and "2 messages per 3600 seconds" in third.message


def test_subjects_are_the_recipients(workspace: Path) -> None:
    tool = Rig(workspace, config={}).registry.get("send_email")
    args = tool.input_model(to=["a@example.com", "b@example.com"], subject="s", body="b")
    assert tool.subjects(args) == ["a@example.com", "b@example.com"]


# ------------------------------------------------------------------------------------------ webhook


def hook(workspace: Path, **settings: Any) -> Rig:
    settings.setdefault("allow_loopback", True)
    return Rig(workspace, config={"tool_config": {"webhook": settings}})


def test_a_webhook_posts_json_and_returns_the_response(
    workspace: Path, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    http_server.route("/hook/ok", 202, body='{"queued": true}', content_type="application/json")
    monkeypatch.setenv("TEST_HOOK_SECRET", "hook-secret")
    rig = hook(workspace, headers={"X-Source": "toolrig"}, header_env={"X-Signature": "TEST_HOOK_SECRET"})
    result = rig.call_sync("webhook", {"url": http_server.url("/hook/ok"), "payload": {"event": "deploy", "n": 3}})
    assert result.output == {"status_code": 202, "response": '{"queued": true}'}
    seen = http_server.seen[-1]
    assert seen.method == "POST" and json.loads(seen.body) == {"event": "deploy", "n": 3}
    assert seen.headers["Content-Type"] == "application/json"
    assert (seen.headers["X-Source"], seen.headers["X-Signature"]) == ("toolrig", "hook-secret")


def test_a_webhook_can_put_and_reports_error_statuses_as_data(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/hook/fail", 500, body="boom", content_type="text/plain")
    result = hook(workspace).call_sync(
        "webhook", {"url": http_server.url("/hook/fail"), "payload": {}, "method": "PUT"}
    )
    assert result.output == {"status_code": 500, "response": "boom"}
    assert http_server.seen[-1].method == "PUT"


def test_a_webhook_response_is_cut_at_the_configured_size(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/hook/big", body="r" * 100_000, content_type="text/plain")
    result = hook(workspace, max_response_chars=500).call_sync(
        "webhook", {"url": http_server.url("/hook/big"), "payload": {}}
    )
    assert result.output["response"] == "r" * 500


def test_a_webhook_does_not_follow_redirects_by_default(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/hook/moved", 307, Location="/hook/ok")
    result = hook(workspace).call_sync("webhook", {"url": http_server.url("/hook/moved"), "payload": {}})
    assert result.output["status_code"] == 307


def test_a_missing_header_variable_is_a_clear_error(workspace: Path, http_server: HttpServer) -> None:
    rig = hook(workspace, header_env={"Authorization": "TEST_UNSET_HOOK_VAR"})
    result = rig.call_sync("webhook", {"url": http_server.url("/hook/ok"), "payload": {}})
    assert result.error_type == "unavailable" and "TEST_UNSET_HOOK_VAR" in result.message
