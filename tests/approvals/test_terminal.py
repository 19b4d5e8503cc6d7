from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from toolrig.approvals import ApprovalRequest
from toolrig.approvals.terminal import TerminalChannel


def request(n: int, tool: str = "shell", command: str = "ls") -> ApprovalRequest:
    return ApprovalRequest(
        id=f"c{n}",
        tool=tool,
        args={"command": command},
        subjects=(command,),
        reason="approvals are 'always'",
        fingerprint=f"fp{n}",
        suggested=(f"{tool}:{command}",),
    )


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):  # a test may have closed the write end already
            os.close(fd)


def answer(pipe: tuple[int, int], typed: str, *requests: ApprovalRequest, close: bool = False) -> tuple[list, str]:
    os.write(pipe[1], typed.encode())
    if close:
        os.close(pipe[1])
    out = io.StringIO()
    channel = TerminalChannel(input_fd=pipe[0], output=out)

    async def run() -> list:
        with anyio.fail_after(5):
            return await channel.decide(list(requests))

    return anyio.run(run), out.getvalue()


def test_yes_once_binds_to_the_request(pipe: tuple[int, int]) -> None:
    (decision,), shown = answer(pipe, "y\n", request(1))
    assert decision.verdict == "allow_once" and decision.fingerprint == "fp1"
    assert '[1] shell {"command": "ls"}' in shown and "acts on: ls" in shown and "why asked" in shown


def test_always_saves_the_suggested_pattern_or_the_one_typed(pipe: tuple[int, int]) -> None:
    typed = "a\n\nalways\ngit *\na\nshell:git log *\n"
    decisions, shown = answer(pipe, typed, request(1), request(2, command="git log"), request(3, command="git log -1"))
    assert [(d.verdict, d.patterns) for d in decisions] == [
        ("allow_always", ("shell:ls",)),
        ("allow_always", ("shell:git *",)),  # a bare glob is about this tool's subjects
        ("allow_always", ("shell:git log *",)),
    ]
    assert "save to the allowlist: shell:ls" in shown


def test_no_asks_for_a_reason_for_the_model(pipe: tuple[int, int]) -> None:
    (decision,), _ = answer(pipe, "n\nwrong branch\n", request(1))
    assert (decision.verdict, decision.reason) == ("deny", "wrong branch")


def test_a_batch_is_shown_whole_and_capitals_answer_the_rest(pipe: tuple[int, int]) -> None:
    decisions, shown = answer(pipe, "maybe\ny\nN\n\n", request(1), request(2), request(3))
    assert [d.verdict for d in decisions] == ["allow_once", "deny", "deny"]
    assert "3 tool calls need approval" in shown and "[3] shell" in shown.split("[1/3]")[0]
    assert "please answer y, a or n" in shown


def test_closed_input_denies_everything_left(pipe: tuple[int, int]) -> None:
    decisions, _ = answer(pipe, "y\n", request(1), request(2), close=True)
    assert [d.verdict for d in decisions] == ["allow_once", "deny"]
    assert "input was closed" in decisions[1].reason


def test_control_characters_from_the_model_are_shown_escaped(pipe: tuple[int, int]) -> None:
    _, shown = answer(pipe, "n\n\n", request(1, command="ls\x1b[2J\rrm"))
    assert "\x1b" not in shown and "\\x1b[2J\\rrm" in shown


# ---------------------------------------------------------------------------------- a real terminal


class Typist(io.StringIO):
    """The screen of a pseudo-terminal whose person types each answer once its prompt is shown.

    Keys typed before a list is drawn are flushed when the terminal enters cbreak mode (on purpose: a key
    pressed before the question appeared answers nothing), so each answer waits for its prompt.
    """

    def __init__(self, main: int, typed: list[tuple[str, bytes]]) -> None:
        super().__init__()
        self.main = main
        self.pending = list(typed)
        self.seen = 0

    def write(self, text: str) -> int:
        written = super().write(text)
        while self.pending and self.pending[0][0] in self.getvalue()[self.seen :]:
            prompt, keys = self.pending.pop(0)
            self.seen = self.getvalue().index(prompt, self.seen) + len(prompt)
            os.write(self.main, keys)
        return written


LIST = "enter confirms"


def on_a_terminal(typed: list[tuple[str, bytes]], *requests: ApprovalRequest) -> tuple[list, str]:
    """The channel reading a pseudo-terminal; each answer is typed when its prompt shows."""
    main, child = pty.openpty()
    try:
        out = Typist(main, typed)
        channel = TerminalChannel(input_fd=child, output=out)

        async def run() -> list:
            with anyio.fail_after(5):
                return await channel.decide(list(requests))

        return anyio.run(run), out.getvalue()
    finally:
        os.close(main)
        os.close(child)


def test_on_a_terminal_an_approval_is_a_list_as_a_question_is() -> None:
    """Issue 33 item 13: approvals were the one prompt typed as a line where questions are a list."""
    typed = [(LIST, b"\x1b[B\n"), ("save to the allowlist", b"\n")]  # down to "yes, always", enter; accept
    (decision,), shown = on_a_terminal(typed, request(1))
    assert (decision.verdict, decision.patterns) == ("allow_always", ("shell:ls",))
    assert "[1/1] allow shell?" in shown and "( ) yes, always - add it to the allowlist" in shown
    assert "or press y / a / n" in shown and "→ yes, always" in shown
    typed = [(LIST, b"n"), ("-", b"\n"), ("reason for the model", b"wrong branch\n")]  # the letters still answer
    (decision,), _ = on_a_terminal(typed, request(1))
    assert (decision.verdict, decision.reason) == ("deny", "wrong branch")
    typed = [(LIST, b"y\n"), ("[2/3]", b""), (LIST, b"N\n"), ("reason for the model", b"\n")]
    decisions, shown = on_a_terminal(typed, request(1), request(2), request(3))
    assert [d.verdict for d in decisions] == ["allow_once", "deny", "deny"]
    assert "no to this and all the rest" in shown
    (decision,), _ = on_a_terminal([(LIST, b"\x1b")], request(1))  # Esc: nobody said yes
    assert decision.verdict == "deny"


def run_on_a_terminal(workspace: Path, args: list[str], typed: list[tuple[str, str]]) -> tuple[dict, str]:
    """Run `toolrig ...` with a pseudo-terminal as stdin/stderr; answer each prompt as it appears."""
    main, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolrig", *args, "--root", str(workspace)],
        stdin=child,
        stderr=child,
        stdout=subprocess.PIPE,
    )
    os.close(child)
    screen = ""
    deadline = time.monotonic() + 60
    pending = list(typed)
    try:
        while process.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    screen += os.read(main, 4096).decode(errors="replace")
                except OSError:
                    break
            while pending and pending[0][0] in screen:
                prompt, keys = pending.pop(0)
                screen = screen.replace(prompt, f"<{prompt}>", 1)
                os.write(main, keys.encode())
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(main)
        if process.poll() is None:
            process.kill()
    assert not pending, f"never saw the prompt {pending[0][0]!r}:\n{screen}"
    return json.loads(out), screen


def test_toolrig_call_asks_on_a_terminal_and_remembers_always(workspace: Path, toolrig_home: Path) -> None:
    (toolrig_home / "config.yaml").write_text("approvals:\n  mode: always\n")
    args = ["call", "calculate", "--json", '{"expression": "6*7"}']
    result, screen = run_on_a_terminal(
        workspace, args, [("or press y / a / n", "a\n"), ("save to the allowlist", "\n")]
    )
    assert result == {"is_error": False, "output": {"result": 42}}
    assert "<save to the allowlist>: calculate  (Enter" in screen  # calculate has no subjects: the whole tool
    assert "- calculate" in (toolrig_home / "config.yaml").read_text()
    again, screen = run_on_a_terminal(workspace, args, [])
    assert again["output"] == {"result": 42} and "allow calculate?" not in screen
