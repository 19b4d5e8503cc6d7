"""send_email and webhook: a model telling the outside world something, within what config allows.

Trust model: recipients, subjects, bodies and webhook URLs come from a model and are hostile. Mail goes
only to allowlisted addresses, through the configured SMTP server, at a bounded rate; header fields with
line breaks are refused. Webhooks go through the same network guard as fetch_url.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections import deque
from html import escape as html_escape
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.narrowing import Narrow
from toolrig.sandbox.http import check_request_url, whole_exchange
from toolrig.sandbox.network import NetworkDenied, NetworkSettings

if TYPE_CHECKING:
    from email.message import EmailMessage

# RFC 5322 atext minus '%' and '!': both are legal but are relay routing ('user%victim.test@relay', UUCP
# 'host!user'), which a relay may honour, delivering past the recipient allowlist judged on the domain.
_ADDRESS = re.compile(
    r"^[A-Za-z0-9.#$&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)
_LINE_BREAKS = ("\r", "\n", "\x00", "\u2028", "\u2029", "\x85", "\x0b", "\x0c")


_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}")
MAX_VARIABLE_CHARS = 10_000


class EmailTemplate(BaseModel):
    """A message the person wrote, with ``{{ name }}`` placeholders the call fills in."""

    model_config = ConfigDict(extra="forbid")

    subject: str = Field(description="One line; placeholders allowed.")
    body: str = Field(description="The text (HTML when html is true); placeholders allowed.")
    html: bool = False
    description: str = Field(default="", description="When to use it (shown to the model in errors).")


class SendEmailConfig(BaseModel):
    """Settings under ``tool_config.send_email``; the password may be given as an environment variable's name."""

    model_config = ConfigDict(extra="forbid")

    host: str | None = Field(default=None, description="SMTP server host name.")
    port: int | None = Field(default=None, ge=1, le=65535, description="Default: 25, 587 (starttls) or 465 (tls).")
    security: Literal["none", "starttls", "tls"] = Field(
        default="starttls", description="none, STARTTLS after connecting, or implicit TLS from the start."
    )
    username: str | None = None
    password: str | None = Field(default=None, description="The password itself (prefer password_env).")
    password_env: str | None = Field(default=None, description="Name of the environment variable holding it.")
    ca_file: str | None = Field(default=None, description="CA bundle to verify the server with (default: system).")
    from_address: str = Field(default="toolrig@localhost", description="The From address.")
    allowed_recipients: list[str] = Field(
        default_factory=list, description="Address globs mail may go to ('*@example.com'); empty = nobody."
    )
    templates: dict[str, EmailTemplate] = Field(
        default_factory=dict, description="Named messages a call can send with template= and variables=."
    )
    templates_only: Annotated[bool, Narrow.TRUE_WINS] = Field(
        default=False, description="Only template mail: a call's own subject and body are refused."
    )
    allowed_templates: Annotated[list[str] | None, Narrow.SUBSET] = Field(
        default=None, description="The templates this agent may send (None: every one configured)."
    )
    max_recipients: int = Field(default=10, ge=1, le=100)
    max_messages: int = Field(default=20, ge=1, description="Messages allowed per window.")
    window_seconds: float = Field(default=3600.0, gt=0, description="The rate-limit window.")
    max_body_chars: int = Field(default=100_000, ge=100)
    timeout_seconds: float = Field(default=30.0, gt=0)


class SendEmailInput(ToolInput):
    to: Annotated[list[str], Subject("recipient")] = Field(
        min_length=1, description="Recipient addresses, like 'alice@example.com'."
    )
    subject: str | None = Field(default=None, max_length=300, description="One line (not with template).")
    body: str | None = Field(default=None, description="The message text, HTML when html is true (not with template).")
    html: bool = Field(default=False, description="Send body as HTML (a plain-text copy is added).")
    template: str | None = Field(default=None, description="A configured template's name, instead of subject and body.")
    variables: dict[str, str] = Field(
        default_factory=dict, description="Values for the template's {{ name }} placeholders."
    )


class SendEmailOutput(ToolOutput):
    message_id: str


def _header_safe(field: str, value: str) -> None:
    if any(ch in value for ch in _LINE_BREAKS):
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The {field} contains a line break; header fields must be a single line.",
            f"Remove the line breaks from the {field}.",
        )


def _check_recipients(to: list[str], config: SendEmailConfig) -> list[str]:
    if len(to) > config.max_recipients:
        raise ToolError(ErrorType.INVALID_INPUT, f"At most {config.max_recipients} recipients per message.")
    checked = []
    for address in to:
        _header_safe("recipient", address)
        if not _ADDRESS.match(address):
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"'{address}' is not a plain email address.",
                "Give bare addresses like 'name@example.com', one per list item, without display names.",
            )
        lowered = address.lower()
        if not any(fnmatch.fnmatchcase(lowered, p.lower()) for p in config.allowed_recipients):
            raise ToolError(
                ErrorType.DENIED,
                f"Mail to '{address}' is not allowed by the configuration.",
                "Send only to the allowed recipients, or ask the user to add this address.",
            )
        checked.append(address)
    return checked


def _fill(text: str, values: dict[str, str], escape: bool) -> str:
    """One pass: a value is never read for placeholders itself; in HTML it is escaped."""
    return _PLACEHOLDER.sub(lambda m: html_escape(values[m.group(1)]) if escape else values[m.group(1)], text)


def _template_names(config: SendEmailConfig) -> list[str]:
    allowed = config.allowed_templates
    return sorted(n for n in config.templates if allowed is None or n in allowed)


def compose(input: SendEmailInput, config: SendEmailConfig) -> tuple[str, str, bool]:
    """The subject, body and html flag the call sends: its own, or a template's filled in (seed 004)."""
    names = _template_names(config)
    offered = ", ".join(names) or "none are configured"
    if input.template is None:
        if config.templates_only:
            raise ToolError(
                ErrorType.DENIED,
                "Only template mail may be sent here: a message's own subject and body are refused.",
                f"Call send_email with template= and variables=; the templates: {offered}.",
            )
        if input.subject is None or input.body is None:
            raise ToolError(ErrorType.INVALID_INPUT, "Give subject and body, or a template.")
        if input.variables:
            raise ToolError(ErrorType.INVALID_INPUT, "variables go with a template; none was named.")
        return input.subject, input.body, input.html
    if input.subject is not None or input.body is not None:
        raise ToolError(ErrorType.INVALID_INPUT, "Give either a template or subject and body, not both.")
    chosen = config.templates.get(input.template) if input.template in names else None
    if chosen is None:
        raise ToolError(
            ErrorType.DENIED if input.template in config.templates else ErrorType.NOT_FOUND,
            f"There is no template '{input.template[:100]}' this agent may send.",
            f"Use one of: {offered}.",
        )
    wanted = set(_PLACEHOLDER.findall(chosen.subject)) | set(_PLACEHOLDER.findall(chosen.body))
    missing, extra = sorted(wanted - set(input.variables)), sorted(set(input.variables) - wanted)
    if missing or extra:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"Template '{input.template}' takes the variables {', '.join(sorted(wanted)) or '(none)'}"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not in it: {', '.join(extra)[:500]}" if extra else "")
            + ".",
            "Give exactly the template's variables.",
        )
    if any(len(v) > MAX_VARIABLE_CHARS for v in input.variables.values()):
        raise ToolError(ErrorType.TOO_LARGE, f"A variable's value is over {MAX_VARIABLE_CHARS:,} characters.")
    subject = _fill(chosen.subject, input.variables, escape=False)
    return subject, _fill(chosen.body, input.variables, escape=chosen.html), chosen.html


class _Text(HTMLParser):
    """The plain-text copy of an HTML mail body."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._skip += tag in ("script", "style")
        if tag in ("br", "p", "div", "li", "tr", "h1", "h2", "h3"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style") and self._skip > 0

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def plain_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    return re.sub(r"\n{3,}", "\n\n", "".join(parser.parts)).strip() + "\n"


def build_message(sender: str, to: list[str], subject: str, body: str, html: bool) -> EmailMessage:
    import email.policy
    import email.utils
    from email.message import EmailMessage

    message = EmailMessage(policy=email.policy.SMTP)
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    message["Date"] = email.utils.formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = email.utils.make_msgid(domain=sender.rpartition("@")[2] or "localhost")
    if html:
        message.set_content(plain_text(body))
        message.add_alternative(body, subtype="html")
    else:
        message.set_content(body)
    return message


class SendEmail(Tool[SendEmailInput, SendEmailOutput]):
    name = "send_email"
    group = "notify"
    open_world = True
    config_model = SendEmailConfig
    description = (
        "Send an email to one or more allowed recipients. Use it only when the user asked for a message to be "
        "sent. Subject is one line; html=true sends body as HTML with a plain-text copy. Or send a configured "
        "template by name with variables for its placeholders (where config allows only templates, that is the "
        "only way). Recipients outside the configured allowlist are refused, and messages per hour are limited."
    )

    def __init__(self) -> None:
        self._sent: dict[str, deque[float]] = {}  # per workspace: one window for everything sent from it

    async def execute(self, input: SendEmailInput, ctx: ToolContext) -> SendEmailOutput:
        config = ctx.settings(SendEmailConfig)
        subject, body, as_html = compose(input, config)
        _header_safe("subject", subject)  # a template's subject filled in too: a value cannot add a header
        recipients = _check_recipients(input.to, config)
        if len(body) > config.max_body_chars:
            raise ToolError(ErrorType.TOO_LARGE, f"The body is over {config.max_body_chars:,} characters.")
        if config.host is None:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "send_email is not configured: no SMTP host is set.",
                "Ask the user to set tool_config.send_email.host.",
                retryable=False,
            )
        self._take_slot(config, str(ctx.workspace.root))
        message = build_message(config.from_address, recipients, subject, body, as_html)
        await _deliver(message, recipients, config)
        return SendEmailOutput(message_id=str(message["Message-ID"]))

    def _take_slot(self, config: SendEmailConfig, key: str) -> None:
        now = time.monotonic()
        sent = self._sent.setdefault(key, deque())
        while sent and now - sent[0] >= config.window_seconds:
            sent.popleft()
        if len(sent) >= config.max_messages:
            wait = config.window_seconds - (now - sent[0])
            raise ToolError(
                ErrorType.RATE_LIMITED,
                f"send_email may send {config.max_messages} messages per {config.window_seconds:g} seconds.",
                f"Wait about {wait:.0f} seconds before sending another message.",
            )
        sent.append(now)


async def _deliver(message: EmailMessage, recipients: list[str], config: SendEmailConfig) -> None:
    import ssl

    import aiosmtplib

    password = config.password or (os.environ.get(config.password_env) if config.password_env else None)
    if config.password_env and password is None:
        raise ToolError(
            ErrorType.UNAVAILABLE,
            f"The SMTP password variable {config.password_env} is not set.",
            "Ask the user to set it in toolrig's environment.",
            retryable=False,
        )
    port = config.port or {"none": 25, "starttls": 587, "tls": 465}[config.security]
    context = ssl.create_default_context(cafile=config.ca_file) if config.security != "none" else None
    try:
        with whole_exchange(config.timeout_seconds, "Sending the message"):
            await aiosmtplib.send(
                message,
                sender=config.from_address,
                recipients=recipients,
                hostname=config.host,
                port=port,
                username=config.username,
                password=password,
                use_tls=config.security == "tls",
                start_tls=config.security == "starttls",
                tls_context=context,
                timeout=config.timeout_seconds,
            )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        raise ToolError(ErrorType.INVALID_INPUT, f"The SMTP server refused the recipients: {exc}.") from None
    except aiosmtplib.SMTPAuthenticationError as exc:
        raise ToolError(
            ErrorType.UNAVAILABLE, f"The SMTP server refused the login: {exc}.", "Ask the user to check it."
        ) from None
    except (aiosmtplib.SMTPException, OSError) as exc:
        raise ToolError(ErrorType.UNAVAILABLE, f"Sending failed: {type(exc).__name__}: {exc}.") from None


# ------------------------------------------------------------------------------------------ webhook


class WebhookConfig(NetworkSettings):
    """Settings under ``tool_config.webhook``; header values may come from environment variables."""

    headers: dict[str, str] = Field(default_factory=dict, description="Headers sent with every call.")
    header_env: dict[str, str] = Field(
        default_factory=dict, description="Headers whose values are read from environment variables (name: VAR)."
    )
    timeout_seconds: float = Field(default=15.0, gt=0)
    max_redirects: int = Field(default=0, ge=0, le=5, description="Redirects followed, each checked again.")
    max_response_chars: int = Field(default=20_000, ge=100)


class WebhookInput(ToolInput):
    url: Annotated[str, Subject("url")] = Field(description="The webhook's http(s) URL.")
    payload: dict[str, Any] = Field(description="The JSON object to send.")
    method: Literal["POST", "PUT"] = "POST"


class WebhookOutput(ToolOutput):
    status_code: int
    response: str = Field(description="The response body as text, cut at the configured size.")


class Webhook(Tool[WebhookInput, WebhookOutput]):
    name = "webhook"
    group = "notify"
    open_world = True
    config_model = WebhookConfig
    description = (
        "Send a JSON payload to a webhook URL (POST or PUT) and get the status code and response text. Only "
        "public http(s) addresses (and the domains the configuration allows) can be reached."
    )

    async def execute(self, input: WebhookInput, ctx: ToolContext) -> WebhookOutput:
        import httpx2

        config = ctx.settings(WebhookConfig)
        refusal = check_request_url(input.url, config.policy())
        if refusal is not None and not refusal.allowed:
            raise _webhook_denied(input.url, refusal.reason)
        if ctx.http is None:
            raise ToolError(ErrorType.UNAVAILABLE, "No network access is configured for this call.")
        headers = {**config.headers, **_env_headers(config.header_env)}
        limit = config.max_response_chars * 4
        async with ctx.http.client(
            config.policy(), timeout=config.timeout_seconds, max_redirects=config.max_redirects
        ) as client:
            try:
                with whole_exchange(config.timeout_seconds, f"The webhook call to {input.url}"):
                    async with client.stream(input.method, input.url, json=input.payload, headers=headers) as response:
                        data = bytearray()
                        async for chunk in response.aiter_bytes():
                            data += chunk
                            if len(data) >= limit:
                                break
            except NetworkDenied as exc:
                raise _webhook_denied(input.url, exc.decision.reason) from None
            except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
                kind = ErrorType.TIMEOUT if isinstance(exc, httpx2.TimeoutException) else ErrorType.UNAVAILABLE
                raise ToolError(kind, f"The webhook call failed: {type(exc).__name__}: {exc}.") from None
        text = bytes(data).decode(response.charset_encoding or "utf-8", errors="replace")
        return WebhookOutput(status_code=response.status_code, response=text[: config.max_response_chars])


def _webhook_denied(url: str, reason: str) -> ToolError:
    return ToolError(ErrorType.DENIED, f"The webhook {url} was refused: {reason}.", "Use an allowed public URL.")


def _env_headers(mapping: dict[str, str]) -> dict[str, str]:
    headers = {}
    for name, variable in mapping.items():
        value = os.environ.get(variable)
        if value is None:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                f"The webhook header {name} needs the environment variable {variable}, which is not set.",
                "Ask the user to set it in toolrig's environment.",
                retryable=False,
            )
        headers[name] = value
    return headers


TOOLS = [SendEmail(), Webhook()]
