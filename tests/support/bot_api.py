"""A local server speaking the Telegram Bot API methods toolrig uses, with messages and presses a test scripts.

``sendMessage``, ``getUpdates`` (long polling, honouring ``offset`` and ``timeout``), ``answerCallbackQuery``,
``editMessageText`` and ``setWebhook``, under ``/bot<token>/<method>``, JSON in and ``{"ok": ..., "result": ...}``
out. ``flood`` makes the next calls of a method answer 429 with ``retry_after``, as Telegram's flood control does.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class BotApi:
    token: str = "123:TEST"
    sent: list[dict[str, Any]] = field(default_factory=list)
    answered: list[dict[str, Any]] = field(default_factory=list)
    edited: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    webhooks: list[dict[str, Any]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # every method called, in order
    port: int = 0

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        self._next_update = 1
        self._server: ThreadingHTTPServer | None = None
        self._floods: dict[str, list[int]] = {}
        self._forced: list[dict[str, Any]] = []

    def flood(self, method: str, times: int = 1, retry_after: int = 0) -> None:
        """The next ``times`` calls of ``method`` are refused with 429 and ``retry_after`` seconds."""
        self._floods[method] = [retry_after] * times

    def wait_until(self, check: Any, timeout: float = 30, what: str = "") -> None:
        """Block until ``check()`` holds (re-checked on every call the server answers)."""
        with self._changed:
            if not self._changed.wait_for(check, timeout):
                raise AssertionError(f"timed out waiting for {what or check}")

    def say(self, text: str, *, from_id: int, chat_id: int | None = None, reply_to: int | None = None) -> int:
        """A person sends the bot a text message (in their private chat unless ``chat_id`` says another)."""
        chat = from_id if chat_id is None else chat_id
        message: dict[str, Any] = {
            "message_id": 10_000 + self._next_update,
            "from": {"id": from_id, "is_bot": False, "first_name": "P"},
            "chat": {"id": chat, "type": "private" if chat == from_id else "group"},
            "date": 0,
            "text": text,
        }
        if reply_to is not None:
            message["reply_to_message"] = {"message_id": reply_to, "chat": {"id": chat}}
        return self.push({"message": message})

    def push(self, update: dict[str, Any], update_id: int | None = None) -> int:
        """Queue any update (``update_id`` given: a replay or a forgery); returns its id."""
        with self._changed:
            if update_id is None:
                update_id = self._next_update
                self._next_update += 1
            else:  # delivered once whatever the poller's offset: what a replaying server or proxy would do
                self._forced.append({"update_id": update_id, **update})
                self._changed.notify_all()
                return update_id
            self.updates.append({"update_id": update_id, **update})
            self._changed.notify_all()
            return update_id

    def to(self, chat_id: int) -> list[dict[str, Any]]:
        """The messages sent to one chat, each with its latest text (edits applied)."""
        with self._changed:
            latest = {e["message_id"]: e["text"] for e in self.edited if e.get("chat_id") == chat_id}
            return [{**m, "text": latest.get(m["message_id"], m["text"])} for m in self.sent if m["chat_id"] == chat_id]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_for_messages(self, count: int, timeout: float = 20) -> list[dict[str, Any]]:
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.sent) >= count, timeout):
                raise AssertionError(f"expected {count} messages, got {len(self.sent)}")
            return list(self.sent)

    def press(
        self, message: dict[str, Any], choice: str, *, from_id: int | None = None, chat_id: int | None = None
    ) -> None:
        """Press the button whose label starts with ``choice`` on a sent message."""
        buttons = [b for row in message["reply_markup"]["inline_keyboard"] for b in row]
        data = next(b["callback_data"] for b in buttons if b["text"].lower().startswith(choice.lower()))
        self.press_data(message, data, from_id=from_id, chat_id=chat_id)

    def press_data(
        self, message: dict[str, Any], data: str, *, from_id: int | None = None, chat_id: int | None = None
    ) -> None:
        """A press carrying any ``callback_data``: what a modified client could send."""
        chat = message["chat_id"] if chat_id is None else chat_id
        with self._changed:
            update = {
                "update_id": self._next_update,
                "callback_query": {
                    "id": f"cq{self._next_update}",
                    "from": {"id": chat if from_id is None else from_id, "is_bot": False, "first_name": "P"},
                    "message": {"message_id": message["message_id"], "chat": {"id": chat, "type": "private"}},
                    "chat_instance": "1",
                    "data": data,
                },
            }
            self._next_update += 1
            self.updates.append(update)
            self._changed.notify_all()

    def _method(self, name: str, payload: dict[str, Any]) -> Any:
        with self._changed:
            self.calls.append(name)
            self._changed.notify_all()
            if name == "sendMessage":
                message = {**payload, "message_id": len(self.sent) + 1}
                self.sent.append(message)
                self._changed.notify_all()
                return {
                    "message_id": message["message_id"],
                    "chat": {"id": payload["chat_id"]},
                    "text": payload["text"],
                }
            if name == "getUpdates":
                offset = int(payload.get("offset") or 0)
                fresh = lambda: [u for u in self.updates if u["update_id"] >= offset]  # noqa: E731
                self._changed.wait_for(lambda: bool(fresh() or self._forced), float(payload.get("timeout") or 0))
                forced, self._forced = self._forced, []
                return forced + fresh()
            if name == "answerCallbackQuery":
                self.answered.append(payload)
                self._changed.notify_all()
                return True
            if name == "editMessageText":
                self.edited.append(payload)
                self._changed.notify_all()
                return {"message_id": payload["message_id"]}
            if name == "setWebhook":
                self.webhooks.append(payload)
                self._changed.notify_all()
                return True
        raise KeyError(name)

    def start(self) -> BotApi:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                prefix = f"/bot{owner.token}/"
                status, reply = 404, {"ok": False, "error_code": 404, "description": "Not Found"}
                flooded = owner._floods.get(self.path[len(prefix) :]) if self.path.startswith(prefix) else None
                if flooded:
                    owner.calls.append(self.path[len(prefix) :])
                    wait = flooded.pop()
                    status, reply = 429, {"ok": False, "error_code": 429, "description": "Too Many Requests",
                                          "parameters": {"retry_after": wait}}  # fmt: skip
                elif self.path.startswith(prefix):
                    try:
                        reply = {"ok": True, "result": owner._method(self.path[len(prefix) :], json.loads(body))}
                        status = 200
                    except KeyError:
                        pass
                else:
                    status, reply = 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a long poll its client dropped
                    self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        # shutdown() waits for serve_forever to look up from its poll: 0.5 s by default, paid by every test
        # that starts a server of its own (fifteen in tests/remote).
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            with self._changed:
                self._changed.notify_all()
            self._server.shutdown()
            self._server.server_close()
