"""send_email's template restrictions (seed 004): an agent that may send only the messages a person wrote.

Delivered to a real aiosmtpd server on loopback; the filling-in is also checked on open input (hypothesis):
no value adds a header, is read for placeholders itself, or reaches an HTML body unescaped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.servers import SmtpServer
from toolrig import Rig
from toolrig.errors import ToolError
from toolrig.tools.notify import SendEmailConfig, SendEmailInput, _template_names, compose

TEMPLATES = {
    "build_report": {
        "subject": "Build {{ build }} finished: {{ status }}",
        "body": "Build {{build}} is {{ status }}.\n\nDetails: {{ url }}\n",
        "description": "Tell the team a build ended.",
    },
    "digest": {"subject": "Weekly digest", "body": "<p>Hello {{ name }}</p>", "html": True},
}


def mailer(workspace: Path, server: SmtpServer, agent: str | None = None, **settings: Any) -> Rig:
    send_email = {
        "host": "127.0.0.1",
        "port": server.port,
        "security": "none",
        "from_address": "bot@toolrig.test",
        "allowed_recipients": ["*@example.com"],
        "templates": TEMPLATES,
        **settings,
    }
    config: dict[str, Any] = {
        "approvals": {"mode": "off"},
        "tool_config": {"send_email": send_email},
        # The organism's way: one agent may send only the build report, and only as the template says.
        "agents": {
            "notifier": {"tool_config": {"send_email": {"templates_only": True, "allowed_templates": ["build_report"]}}}
        },
    }
    return Rig(workspace, config=config, agent=agent)


REPORT = {
    "to": ["team@example.com"],
    "template": "build_report",
    "variables": {"build": "#42", "status": "green", "url": "https://ci.example.com/42"},
}


def test_a_template_is_filled_in_and_delivered(workspace: Path, smtp_servers: dict[str, SmtpServer]) -> None:
    server = smtp_servers["none"]
    before = len(server.mailbox.envelopes)
    result = mailer(workspace, server, agent="notifier").call_sync("send_email", REPORT)
    assert not result.is_error, result
    message = server.mailbox.messages()[before]
    assert message["Subject"] == "Build #42 finished: green"
    assert message.get_content() == "Build #42 is green.\n\nDetails: https://ci.example.com/42\n"


def test_an_agent_held_to_templates_cannot_write_its_own_mail(
    workspace: Path, smtp_servers: dict[str, SmtpServer]
) -> None:
    server = smtp_servers["none"]
    before = len(server.mailbox.envelopes)
    rig = mailer(workspace, server, agent="notifier")
    own = rig.call_sync("send_email", {"to": ["team@example.com"], "subject": "Hi", "body": "Free text"})
    assert own.is_error and own.error_type == "denied" and "build_report" in (own.next_action_hint or "")
    other = rig.call_sync("send_email", {"to": ["team@example.com"], "template": "digest", "variables": {"name": "A"}})
    assert other.is_error and other.error_type == "denied"
    unknown = rig.call_sync("send_email", {"to": ["team@example.com"], "template": "nope"})
    assert unknown.is_error and unknown.error_type == "not_found"
    assert len(server.mailbox.envelopes) == before
    # Without the agent's restriction, both kinds go out.
    free = mailer(workspace, server).call_sync("send_email", {"to": ["a@example.com"], "subject": "s", "body": "b"})
    assert not free.is_error, free


@pytest.mark.parametrize(
    ("variables", "said"),
    [({"build": "1", "status": "ok"}, "missing: url"), ({**REPORT["variables"], "extra": "x"}, "not in it: extra")],
)
def test_a_templates_variables_must_be_exactly_its_placeholders(
    workspace: Path, smtp_servers: dict[str, SmtpServer], variables: dict[str, str], said: str
) -> None:
    rig = mailer(workspace, smtp_servers["none"], agent="notifier")
    result = rig.call_sync("send_email", {**REPORT, "variables": variables})
    assert result.is_error and result.error_type == "invalid_input" and said in result.message


def test_template_and_own_text_together_are_refused() -> None:
    config = SendEmailConfig.model_validate({"templates": TEMPLATES})
    call = SendEmailInput.model_validate({**REPORT, "subject": "mine"})
    with pytest.raises(ToolError, match="not both"):
        compose(call, config)


@given(st.text(max_size=200), st.text(max_size=200))
def test_no_value_adds_a_header_or_a_placeholder_or_unescaped_html(status: str, name: str) -> None:
    config = SendEmailConfig.model_validate({"templates": TEMPLATES})
    variables = {"build": "{{ status }}", "status": status, "url": "u"}
    subject, body, _ = compose(SendEmailInput.model_validate({**REPORT, "variables": variables}), config)
    assert subject == f"Build {{{{ status }}}} finished: {status}"  # a value is not read for placeholders
    assert body.startswith("Build {{ status }} is ")
    digest = SendEmailInput.model_validate({"to": ["a@example.com"], "template": "digest", "variables": {"name": name}})
    _, html, is_html = compose(digest, config)
    assert is_html and "<" not in html[len("<p>Hello ") : -len("</p>")]


def test_a_line_break_in_a_subject_value_is_refused(workspace: Path, smtp_servers: dict[str, SmtpServer]) -> None:
    rig = mailer(workspace, smtp_servers["none"], agent="notifier")
    evil = {**REPORT["variables"], "status": "green\r\nBcc: all@evil.test"}
    result = rig.call_sync("send_email", {**REPORT, "variables": evil})
    assert result.is_error and result.error_type == "invalid_input" and "line break" in result.message


def test_an_untrusted_workspace_may_hold_mail_to_templates_but_never_release_it() -> None:
    from toolrig.config.narrowing import narrow_settings

    warnings: list[str] = []
    held = SendEmailConfig.model_validate({"templates": TEMPLATES, "templates_only": True})
    released = narrow_settings(held, {"templates_only": False, "allowed_templates": ["digest"]}, "send_email", warnings)
    assert released.templates_only is True  # type: ignore[attr-defined]
    free = SendEmailConfig.model_validate({"templates": TEMPLATES, "allowed_templates": ["build_report"]})
    tightened = narrow_settings(free, {"templates_only": True, "allowed_templates": ["digest"]}, "send_email", warnings)
    assert tightened.templates_only is True and _template_names(tightened) == []  # type: ignore[arg-type,attr-defined]
