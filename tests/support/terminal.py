"""A real terminal for CLI tests: tmux runs the program, send-keys types, capture-pane reads the screen."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path


class Terminal:
    def __init__(self, socket_dir: Path, name: str = "t") -> None:
        if shutil.which("tmux") is None:
            raise RuntimeError("tmux is not installed: `apt-get install -y tmux` (.ci/run does this)")
        self.socket = str(socket_dir / "tmux.sock")
        self.name = name
        # remain-on-exit keeps the pane (and the program's last screen) after the program exits.
        self.conf = socket_dir / "tmux.conf"
        self.conf.write_text("set -g remain-on-exit on\nset -g history-limit 5000\n")

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=10)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def start(self, argv: list[str], env: Mapping[str, str], cwd: Path, width: int = 120, height: int = 40) -> None:
        command = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(argv)
        # remain-on-exit keeps the pane (and the program's last screen) after it exits.
        self._tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            str(cwd),
            command,
        )
        self._tmux("set-option", "-t", self.name, "remain-on-exit", "on")

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def type_line(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.name, "-l", text)
        self._tmux("send-keys", "-t", self.name, "Enter")

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", self.name, "-S", "-200")

    def wait_for(self, text: str, timeout: float = 20.0, after: int = 0) -> str:
        """Poll the screen until ``text`` shows (after ``after`` characters of history); the screen is returned."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen[after:]:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear within {timeout}s; the screen was:\n{screen}")
            time.sleep(0.05)  # a terminal can only be read by polling

    def mark(self) -> int:
        """Where the screen ends now: take it *before* an action, then wait for that action's output after it."""
        return len(self.screen().rstrip())  # the pane's empty rows below the cursor fill up with what comes next

    def wait_prompt(self, prompt: str = "›", after: int = 0, timeout: float = 20.0) -> str:
        """Wait until new output follows ``after`` and the last line is the prompt again (ready for input).

        Waiting for text alone is a race when the text is already on screen from an earlier turn: the next
        keys would be typed while the program is still busy. The prompt coming back is the program's own
        signal that it reads again.
        """
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            lines = [line for line in screen[after:].splitlines() if line.strip()]
            if len(lines) >= 2 and lines[-1].strip() == prompt:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the prompt {prompt!r} did not come back within {timeout}s:\n{screen}")
            time.sleep(0.05)  # a terminal can only be read by polling

    def command(self, line: str, expect: str, timeout: float = 20.0) -> str:
        """Type ``line``, wait for ``expect`` in what it prints and for the prompt after it; the screen is returned."""
        mark = self.mark()
        self.type_line(line)
        self.wait_for(expect, timeout, after=mark)
        return self.wait_prompt(after=mark, timeout=timeout)

    def pid(self) -> int:
        return int(self._tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def wait_exit(self, pid: int, timeout: float = 20.0) -> None:
        """Wait for the program itself to end (tmux can take seconds to reap it on a busy machine)."""
        deadline = time.monotonic() + timeout
        stat = Path(f"/proc/{pid}/stat")
        while True:
            try:
                state = stat.read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, IndexError):
                return
            if state in ("Z", "X"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the program did not exit within {timeout}s; the screen was:\n{self.screen()}")
            time.sleep(0.05)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=10)
