"""What the channel keeps across restarts: each user's session and the last update it handled.

Trust model: the file is input (anyone with the workspace could have edited it): ids are checked on read, and a
malformed file is ignored with a warning (users start new sessions), never trusted.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from toolrig.sandbox.atomic import atomic_write_bytes

log = logging.getLogger("toolrig.channels.telegram")

_SESSION_ID = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")


class ChannelState:
    """``sessions`` (user id -> session id) and ``last_update`` (the highest update id handled)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "channels" / "telegram.json"
        self.sessions: dict[int, str] = {}
        self.last_update = 0
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("telegram: ignoring %s (%s): users start new sessions", self.path, type(exc).__name__)
            return
        if not isinstance(data, dict):
            return
        last = data.get("last_update")
        if isinstance(last, int) and not isinstance(last, bool) and last >= 0:
            self.last_update = last
        sessions = data.get("sessions")
        for user, session in sessions.items() if isinstance(sessions, dict) else ():
            if (
                str(user).isdigit()
                and isinstance(session, str)
                and _SESSION_ID.fullmatch(session)
                and ".." not in session
            ):
                self.sessions[int(user)] = session

    def save(self) -> None:
        data = {"last_update": self.last_update, "sessions": {str(k): v for k, v in self.sessions.items()}}
        atomic_write_bytes(self.path, json.dumps(data, indent=1).encode(), make_parents=True)
