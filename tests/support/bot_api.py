"""A local server speaking the Telegram Bot API methods toolrig uses, with button presses a test scripts.

``sendMessage``, ``getUpdates`` (long polling, honouring ``offset`` and ``timeout``), ``answerCallbackQuery``
and ``editMessageText``, under ``/bot<token>/<method>``, JSON in and ``{"ok": ..., "result": ...}`` out.
"""

from __future__ import annotations

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
    port: int = 0

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        self._next_update = 1
        self._server: ThreadingHTTPServer | None = None

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
                self._changed.wait_for(lambda: bool(fresh()), float(payload.get("timeout") or 0))
                return fresh()
            if name == "answerCallbackQuery":
                self.answered.append(payload)
                self._changed.notify_all()
                return True
            if name == "editMessageText":
                self.edited.append(payload)
                return {"message_id": payload["message_id"]}
        raise KeyError(name)

    def start(self) -> BotApi:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                prefix = f"/bot{owner.token}/"
                status, reply = 404, {"ok": False, "error_code": 404, "description": "Not Found"}
                if self.path.startswith(prefix):
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
