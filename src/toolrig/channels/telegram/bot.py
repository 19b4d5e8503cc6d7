"""The Telegram channel: allowed users talk to the agent; each user's messages start or continue their session.

Trust model: every update is data from the internet. Only the configured users, in their own private chat, reach
a run, and their text is only ever a prompt (or the answer to a question they were asked): the slash commands in
``COMMANDS`` are the whole of what a message can make toolrig do. Anyone else, a replayed update id, a forged or
replayed button gets a short refusal and one audit row, never a run. Runs are the gateway's own (``RunManager``),
under the same Rig, policy and audit log as the page's.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from functools import partial
from typing import TYPE_CHECKING, Any, TypeGuard

import anyio

from toolrig.channels.telegram import render
from toolrig.channels.telegram.botapi import BotApi, BotApiError
from toolrig.channels.telegram.buttons import Button, Buttons
from toolrig.channels.telegram.state import ChannelState
from toolrig.channels.telegram.view import RunView

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from toolrig.config import TelegramChannelConfig
    from toolrig.gateway.runs import LiveRun, RunManager
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.channels.telegram")

COMMANDS = {
    "/new": "start a new conversation (a new session)",
    "/stop": "stop the running answer and everything it started",
    "/status": "what is going on in your session",
    "/todos": "the agent's todo list for your session",
    "/resume": "/resume SESSION_ID: continue a session (one started on the gateway's page, say)",
    "/help": "this list",
}
UPDATES = ["message", "callback_query"]
REFUSAL = "This bot answers only the people it was set up for."
REFUSAL_GAP = 60.0  # at most one refusal reply a minute to one chat: a stranger cannot make the bot spam
HOUR = 3600.0
WATCH_SECONDS = 2.0
STALE = "This button is not valid (any more)."


class TelegramBot:
    def __init__(self, rig: Rig, runs: RunManager, settings: TelegramChannelConfig, token: str) -> None:
        from toolrig.channels.telegram.botapi import DEFAULT_API

        self.rig = rig
        self.runs = runs
        self.settings = settings
        self.allowed = frozenset(settings.allowed_users)
        self.api = BotApi(token, settings.base_url or DEFAULT_API)
        self.state = ChannelState(rig.workspace.state_dir)
        self.buttons = Buttons()
        self.current: dict[int, LiveRun] = {}
        self.started: dict[int, deque[float]] = {}
        self._refused_at: dict[int, float] = {}
        self._tasks: TaskGroup | None = None
        self._seen: set[str] = set()  # runs shown in a chat already
        self.ready = anyio.Event()  # set once updates are being received (tests wait on it)

    async def serve(self, receive: Any = None) -> None:
        """Receive updates until cancelled: long polling, or ``receive`` (the webhook's listener) when given."""
        async with self.api, anyio.create_task_group() as tasks:
            self._tasks = tasks
            tasks.start_soon(self._watch)
            if receive is not None:
                await receive(self)
            else:
                await self._poll()

    async def _poll(self) -> None:
        failures = 0
        poll = self.settings.poll_seconds
        while True:
            payload = {"offset": self.state.last_update + 1, "timeout": poll, "allowed_updates": UPDATES}
            self.ready.set()
            try:
                updates = await self.api.call("getUpdates", payload, seconds=poll + 10)
                failures = 0
            except BotApiError as exc:
                if exc.status in (401, 404):  # the token is wrong or revoked: polling on would only repeat that
                    log.error("telegram: the Bot API refused the bot's token (%s): the channel stops", exc)
                    return
                failures += 1
                log.warning("telegram: %s (retrying)", exc)
                await anyio.sleep(min(60.0, 2.0**failures))
                continue
            for update in updates if isinstance(updates, list) else ():
                await self.handle(update)

    async def _watch(self) -> None:
        """A run on a user's session that this bot did not start is shown in their chat too.

        That is a run paused before a restart (its buttons come again) or one started on the gateway's page on
        a Telegram user's session. Checked now and every ``WATCH_SECONDS``; the bot starts its own runs at once.
        """
        while True:
            owners = {session: user for user, session in self.state.sessions.items()}
            kept = list(self.runs.runs.values())  # finished ones too: a quick run may end between two looks
            self._seen &= {run.id for run in kept}
            for run in kept:
                user = owners.get(run.session_id or "")
                if run.id not in self._seen and user is not None and self.allows(user) and self.running(user) is None:
                    self._show(user, run)
            await anyio.sleep(WATCH_SECONDS)

    # ------------------------------------------------------------------------------------------ updates

    async def handle(self, update: Any) -> None:
        """One update, from polling or the webhook; a replayed or malformed one is refused and audited."""
        update_id = update.get("update_id") if isinstance(update, dict) else None
        if not isinstance(update_id, int) or isinstance(update_id, bool):
            await self.audit("malformed update", "unknown")
            return
        if update_id <= self.state.last_update:
            await self.audit("replayed update id", f"update {update_id}")
            return
        self.state.last_update = update_id
        await anyio.to_thread.run_sync(self.state.save)
        message, query = update.get("message"), update.get("callback_query")
        try:
            if isinstance(message, dict):
                await self._message(message)
            elif isinstance(query, dict):
                await self._press(query)
        except BotApiError as exc:
            log.warning("telegram: %s", exc)
        except Exception:  # one update's failure must not stop the bot for everyone
            log.exception("telegram: handling update %s failed", update_id)

    async def _message(self, message: dict[str, Any]) -> None:
        sender, chat = _object(message.get("from")), _object(message.get("chat"))
        user, chat_id = sender.get("id"), chat.get("id")
        if not self.allows(user) or chat_id != user or chat.get("type") != "private":
            why = "not an allowed user" if not self.allows(user) else "not the user's private chat"
            await self.audit(why, f"user {user} in chat {chat_id}")
            await self._refuse_chat(chat_id)
            return
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            await self.say(user, "I read text messages only.")
            return
        replied = self.buttons.replied_to(user, _object(message.get("reply_to_message")).get("message_id"))
        if replied is not None:
            await self._typed_answer(user, replied, text)
        elif text.startswith("/"):
            await self._command(user, text)
        else:
            await self._prompt(user, text)

    async def _typed_answer(self, user: int, replied: tuple[str, Button], text: str) -> None:
        nonce, button = replied
        card = button.card
        if card is None or button.view is None or not card.questions[button.question].free_text:
            await self.say(user, "This question takes one of its buttons, not text.")
            return
        self.buttons.close(nonce, "answered")
        said = button.view.reply(button, {"other_text": text.strip()[:2000]})
        await self.say(user, said)

    async def _refuse_chat(self, chat_id: Any) -> None:
        if not isinstance(chat_id, int):
            return
        now = time.monotonic()
        if now - self._refused_at.get(chat_id, -REFUSAL_GAP) < REFUSAL_GAP:
            return
        if len(self._refused_at) > 10_000:
            self._refused_at.clear()
        self._refused_at[chat_id] = now
        await self.api.best_effort("sendMessage", {"chat_id": chat_id, "text": REFUSAL})

    # ------------------------------------------------------------------------------------------ prompts

    def allows(self, user: Any) -> TypeGuard[int]:
        """An allowed user's id: an int in ``allowed_users`` (an update's "id" may be anything at all)."""
        return isinstance(user, int) and not isinstance(user, bool) and user in self.allowed

    def running(self, user: int) -> LiveRun | None:
        run = self.current.get(user)
        return run if run is not None and not run.finished else None

    async def _prompt(self, user: int, text: str) -> None:
        if self.running(user) is not None:
            await self.say(user, "An answer is going: wait for it, answer its buttons, or /stop it.")
            return
        if len(text) > self.settings.max_prompt_chars:
            await self.say(user, f"That message is over {self.settings.max_prompt_chars} characters: send less.")
            return
        started = self.started.setdefault(user, deque())
        now = time.monotonic()
        while started and now - started[0] > HOUR:
            started.popleft()
        if len(started) >= self.settings.runs_per_hour:
            await self.say(user, f"You have started {len(started)} runs this hour, the limit: try again later.")
            return
        await self.start(user, text)

    async def start(self, user: int, prompt: str) -> LiveRun | None:
        from toolrig.gateway.runs import RunRefused

        session = self.state.sessions.get(user)
        try:
            run = self.runs.start(prompt, session_id=session, agent=self.settings.agent)
        except RunRefused as exc:
            if exc.status != 404 or session is None:
                await self.say(user, exc.message)
                return None
            self._forget(user)  # the session is gone (removed): a new one
            await self.say(user, "Your session is gone: this starts a new one.")
            run = self.runs.start(prompt, session_id=None, agent=self.settings.agent)
        self.started.setdefault(user, deque()).append(time.monotonic())
        for nonce, button in list(self.buttons.open.items()):
            if button.user == user and button.kind == "followup":  # suggestions for an earlier answer
                self.buttons.close(nonce, "superseded")
        self._show(user, run)
        return run

    def _show(self, user: int, run: LiveRun) -> None:
        self._seen.add(run.id)
        self.current[user] = run
        if self._tasks is not None:
            self._tasks.start_soon(self._follow, user, run, name=f"telegram view {run.id}")

    async def _follow(self, user: int, run: LiveRun) -> None:
        view = RunView(
            self.api,
            user,
            run,
            self.buttons,
            edit_seconds=self.settings.edit_seconds,
            on_session=lambda session: self._remember(user, session),
        )
        try:
            followups = await view.follow()
            if followups and self.current.get(user) is run:
                await self._offer(user, followups)
        except Exception:  # one view's failure must not take the channel (and every other user) down
            log.exception("telegram: showing run %s failed", run.id)

    async def _offer(self, user: int, followups: list[str]) -> None:
        button = Button(user=user, kind="followup", prompts=tuple(f[:2000] for f in followups))
        nonce = self.buttons.add(button)
        rows = [[{"text": f[:60], "callback_data": f"{nonce}:{i}"}] for i, f in enumerate(followups)]
        payload = {"chat_id": user, "text": "Suggestions:", "reply_markup": {"inline_keyboard": rows}}
        message = await self.api.best_effort("sendMessage", payload)
        if isinstance(message, dict):
            button.message_id = int(message.get("message_id") or 0)

    def _remember(self, user: int, session: str) -> None:
        if self.state.sessions.get(user) != session:
            self.state.sessions[user] = session
            self.state.save()

    def _forget(self, user: int) -> None:
        if self.state.sessions.pop(user, None) is not None:
            self.state.save()

    async def say(self, user: int, text: str, *, html: bool = False) -> None:
        payload: dict[str, Any] = {"chat_id": user, "text": text}
        if html:
            payload["parse_mode"] = "HTML"
        await self.api.best_effort("sendMessage", payload)

    # ------------------------------------------------------------------------------------------ commands

    async def _command(self, user: int, text: str) -> None:
        word, _, rest = text.strip().partition(" ")
        name = word.split("@", 1)[0].lower()
        run = self.running(user)
        if name == "/stop":
            if run is None:
                await self.say(user, "Nothing is running.")
                return
            self.runs.cancel(run.id)  # the run and everything it started: subagents, commands, waits
            await self.say(user, "Stopping.")
        elif name == "/new":
            if run is not None:
                await self.say(user, "An answer is going: /stop it first.")
                return
            self._forget(user)
            await self.say(user, "New conversation: your next message starts a new session.")
        elif name == "/status":
            await self.say(user, self._status(user, run))
        elif name == "/todos":
            await self._todos(user)
        elif name == "/resume":
            await self._resume(user, run, rest.strip())
        else:
            lines = [f"{command}: {what}" for command, what in COMMANDS.items()]
            head = (
                "Send a message to talk to the agent. Commands:"
                if name in ("/help", "/start")
                else ("Not a command here. Commands:")
            )
            await self.say(user, "\n".join([head, *lines]))

    def _status(self, user: int, run: LiveRun | None) -> str:
        session = self.state.sessions.get(user)
        lines = [f"session: {session or 'none yet (your next message starts one)'}"]
        if run is None:
            lines.append("no answer is going")
        else:
            cards = len(run.waiting.cards) if run.waiting is not None else 0
            lines.append(f"run {run.id}: {run.status}" + (f", waiting for {cards} answer(s) from you" if cards else ""))
        hour = [t for t in self.started.get(user, ()) if time.monotonic() - t <= HOUR]
        lines.append(f"runs this hour: {len(hour)} of {self.settings.runs_per_hour}")
        lines.append(f"agent: {self.settings.agent or self.rig.agent or 'default'}")
        return "\n".join(lines)

    async def _todos(self, user: int) -> None:
        from toolrig.gateway import reads

        session = self.state.sessions.get(user)
        if session is None:
            await self.say(user, "No session yet.")
            return
        try:
            notes = await reads.notes(self.rig, session)
        except reads.NotFound:
            await self.say(user, "Your session is gone: /new starts another.")
            return
        await self.say(user, render.todos(notes["todos"]), html=True)

    async def _resume(self, user: int, run: LiveRun | None, session: str) -> None:
        from toolrig.agent.session import SessionStore

        if run is not None:
            await self.say(user, "An answer is going: /stop it first.")
            return
        store = SessionStore.shared(self.rig.workspace.state_dir)
        theirs = any(other != user and kept == session for other, kept in self.state.sessions.items())
        if not session or len(session) > 200 or theirs or not await anyio.to_thread.run_sync(store.exists, session):
            await self.say(user, "No session has this id (the gateway's page lists them).")  # another's: as unknown
            return
        self._remember(user, session)
        await self.say(user, f"Your next message continues session {session}.")

    # ------------------------------------------------------------------------------------------ buttons

    async def _press(self, query: dict[str, Any]) -> None:
        data = query.get("data") if isinstance(query.get("data"), str) else ""
        nonce, _, code = str(data).partition(":")
        user = _object(query.get("from")).get("id")
        chat_id = _object(_object(query.get("message")).get("chat")).get("id")
        answer = {"callback_query_id": query.get("id")}
        button = self.buttons.open.get(nonce)
        if not self.allows(user) or button is None or button.user != user or chat_id != user:
            closed = self.buttons.closed.get(nonce)
            why = (
                "forged: not an allowed user" if not self.allows(user)
                else "unknown button" if button is None and closed is None
                else f"replayed: {closed[0]}" if closed is not None
                else "forged: another user's button"
            )  # fmt: skip
            await self.audit(f"button {why}", f"user {user} in chat {chat_id}", tool="(telegram button)")
            await self.api.best_effort(
                "answerCallbackQuery", {**answer, "text": "This button is not valid (any more)."}
            )
            return
        if button.kind == "followup":
            text = await self._followup(user, nonce, button, code)
        elif button.view is not None:
            text = await button.view.press(button, code)
            card = button.card
            if card is not None and card.replies[button.question] is not None:
                self.buttons.close(nonce, "answered")
        else:
            text = STALE
        await self.api.best_effort("answerCallbackQuery", {**answer, "text": text[:180]})

    async def _followup(self, user: int, nonce: str, button: Button, code: str) -> str:
        if not code.isdigit() or int(code) >= len(button.prompts):
            return "Not a suggestion."
        if self.running(user) is not None:
            return "An answer is going: wait for it or /stop it."
        self.buttons.close(nonce, "answered")
        prompt = button.prompts[int(code)]
        await self.say(user, f"▶ {prompt}")
        await self.start(user, prompt)
        return "Sent"

    async def audit(self, why: str, sender: str, *, tool: str = "(telegram message)") -> None:
        log.warning("telegram: refused %s (%s)", why, sender)
        audit = self.rig.governance.audit
        if audit is None:
            return
        record = partial(
            audit.record_refusal,
            tool=tool,
            call_id="",
            session=None,
            agent=None,
            origin="telegram",
            rule="channels.telegram",
            approval=f"refused:{why}",
            args={"sender": sender[:200]},
        )
        try:
            await anyio.to_thread.run_sync(record)
        except Exception:  # the refusal stands; a full disk must not let the update through
            log.exception("telegram: could not audit a refusal")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
