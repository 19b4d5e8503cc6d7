"""Run a function in a thread that stops at a chosen point, so a test can interleave another thread exactly there.

Races between two threads on shared state are decided by where the interpreter switches threads; a test
that waits for the switch to fall in the window would pass or fail by luck. ``Paused`` puts the switch there:
its thread stops at the point (a trace event), the test runs the other side to its end, then lets it go on.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

# Bounds a wait that should end at once; a test that hits it fails (a point never reached), it never hangs.
_BOUND = 30.0


class Paused:
    """``target`` in a thread of its own, stopped before the ``nth`` trace event of ``code`` that ``event`` names.

    ``event`` is ``"call"`` (a frame of ``code`` begins) or ``"line"`` (a new line of it, counted within
    the first frame of ``code`` the thread enters).
    """

    def __init__(self, target: Callable[[], Any], code: CodeType, event: str = "line", nth: int = 1) -> None:
        self.reached = threading.Event()
        self._go = threading.Event()
        self.error: BaseException | None = None
        self._seen = 0

        def local(frame: FrameType, kind: str, arg: Any) -> Any:
            if kind == event and not self.reached.is_set():
                self._count()
            return local

        def begin(frame: FrameType, kind: str, arg: Any) -> Any:
            if frame.f_code is not code or self.reached.is_set():
                return None  # no line events for any other frame
            if event == "call":
                self._count()
                return None
            return local

        def run() -> None:
            sys.settrace(begin)
            try:
                target()
            except BaseException as exc:
                self.error = exc
            finally:
                sys.settrace(None)

        self._nth = nth
        self.thread = threading.Thread(target=run, daemon=True)

    def _count(self) -> None:
        self._seen += 1
        if self._seen == self._nth:
            self.reached.set()
            self._go.wait(_BOUND)

    def __enter__(self) -> Paused:
        self.thread.start()
        assert self.reached.wait(_BOUND), "the thread never reached the point it was to stop at"
        return self

    def __exit__(self, *exc: object) -> None:
        self._go.set()
        self.thread.join(_BOUND)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
