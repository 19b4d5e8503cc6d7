"""Hostile mail: header injection through the subject or a recipient, and recipients outside the allowlist.

A real SMTP server listens throughout; every refusal is checked to have sent nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import SmtpServer
from toolrig import Rig


@pytest.fixture
def plain_server(smtp_servers: dict[str, SmtpServer]) -> SmtpServer:
    return smtp_servers["none"]


def mailer(workspace: Path, server: SmtpServer, **settings: Any) -> Rig:
    config = {
        "host": "127.0.0.1",
        "port": server.port,
        "security": "none",
        "allowed_recipients": ["*@example.com"],
        **settings,
    }
    return Rig(workspace, config={"tool_config": {"send_email": config}})


def send(rig: Rig, **args: Any) -> Any:
    args.setdefault("to", ["alice@example.com"])
    args.setdefault("subject", "Hello")
    args.setdefault("body", "Body")
    return rig.call_sync("send_email", args)


@pytest.mark.parametrize(
    "subject",
    [
        "Hi\r\nBcc: victim@evil.test",
        "Hi\nBcc: victim@evil.test",
        "Hi\rBcc: victim@evil.test",
        "Hi\r\n\r\nInjected body",
        "Hi\u2028Bcc: victim@evil.test",
        "Hi\x00",
    ],
)
def test_line_breaks_in_the_subject_are_refused(workspace: Path, plain_server: SmtpServer, subject: str) -> None:
    before = len(plain_server.mailbox.envelopes)
    result = send(mailer(workspace, plain_server), subject=subject)
    assert result.error_type == "invalid_input" and "line break" in result.message
    assert len(plain_server.mailbox.envelopes) == before


@pytest.mark.parametrize(
    "recipient",
    [
        "alice@example.com\r\nBcc: victim@evil.test",
        "alice@example.com\nBcc: victim@evil.test",
        "alice@example.com, victim@evil.test",
        "Alice <alice@example.com>",
        "victim@evil.test <alice@example.com>",
        '"alice@example.com" victim@evil.test',
        "alice@example.com\x00victim@evil.test",
        "alice(comment)@example.com",
        "alice@example.com;victim@evil.test",
        "@example.com",
        "alice@",
        "victim%evil.test@example.com",
        "evil.test!victim@example.com",
    ],
)
def test_recipients_that_smuggle_addresses_are_refused(
    workspace: Path, plain_server: SmtpServer, recipient: str
) -> None:
    before = len(plain_server.mailbox.envelopes)
    result = send(mailer(workspace, plain_server), to=[recipient])
    assert result.error_type == "invalid_input", (recipient, result)
    assert len(plain_server.mailbox.envelopes) == before


@pytest.mark.parametrize(
    "recipient", ["victim@evil.test", "alice@example.com.evil.test", "alice@sub.example.org", "ALICE@EVIL.TEST"]
)
def test_recipients_outside_the_allowlist_are_refused(
    workspace: Path, plain_server: SmtpServer, recipient: str
) -> None:
    before = len(plain_server.mailbox.envelopes)
    result = send(mailer(workspace, plain_server), to=["alice@example.com", recipient])
    assert result.error_type == "denied" and recipient in result.message
    assert len(plain_server.mailbox.envelopes) == before


def test_an_empty_allowlist_allows_nobody(workspace: Path, plain_server: SmtpServer) -> None:
    result = send(mailer(workspace, plain_server, allowed_recipients=[]))
    assert result.error_type == "denied"


def test_allowlist_matching_ignores_case(workspace: Path, plain_server: SmtpServer) -> None:
    before = len(plain_server.mailbox.envelopes)
    result = send(mailer(workspace, plain_server), to=["Alice@Example.COM"])
    assert not result.is_error
    assert plain_server.mailbox.envelopes[before].rcpt_tos == ["Alice@Example.COM"]


def test_too_many_recipients_are_refused(workspace: Path, plain_server: SmtpServer) -> None:
    result = send(mailer(workspace, plain_server, max_recipients=2), to=[f"u{i}@example.com" for i in range(3)])
    assert result.error_type == "invalid_input"


def test_a_body_cannot_forge_headers_or_end_the_message(workspace: Path, plain_server: SmtpServer) -> None:
    before = len(plain_server.mailbox.envelopes)
    body = "line one\r\n.\r\nMAIL FROM:<x@evil.test>\r\nRCPT TO:<victim@evil.test>\r\nDATA\r\nBcc: v@evil.test\r\n"
    result = send(mailer(workspace, plain_server), body=body)
    assert not result.is_error
    assert len(plain_server.mailbox.envelopes) == before + 1
    envelope = plain_server.mailbox.envelopes[before]
    assert envelope.rcpt_tos == ["alice@example.com"]
    message = plain_server.mailbox.messages()[before]
    assert message["Bcc"] is None
    assert "RCPT TO:<victim@evil.test>" in message.get_content()
