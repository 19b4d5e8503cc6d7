"""Every route to a protected thing from run_command is refused by the kernel, and the result names the boundary.

The matrix is lean: one command per protected thing tries every route (cat, head, python3, cp, a symlink and a
hard link the command makes, /proc/self/root/...), so a route that leaks shows up as the secret in the output. The
same routes to ordinary things work, and so do git commit and writes in the workspace. A real bubblewrap runs
every command here (CI installs it; it runs as root, and one test runs as an unprivileged user).
"""

from __future__ import annotations

import http.server
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import static_resolver
from toolrig.result import ToolResult
from toolrig.rig import Rig
from toolrig.sandbox.http import GuardedHttp

SECRET = "TOP-SECRET-7f3a"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user home outside /tmp (a command's /tmp is its own), with an SSH key and a visible file."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as made:
        path = Path(made).resolve()
        (path / ".ssh").mkdir()
        (path / ".ssh" / "id_ed25519").write_text(SECRET)
        (path / "notes.txt").write_text("plain")
        monkeypatch.setenv("HOME", str(path))
        yield path


@pytest.fixture
def ws(workspace: Path, home: Path, toolrig_home: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / ".env").write_text(SECRET)
    (workspace / "deep" / "er").mkdir(parents=True)
    (workspace / "deep" / "er" / ".env").write_text(SECRET)
    (workspace / "src").mkdir()
    (workspace / "src" / "a.txt").write_text("in src")
    (workspace / "other.txt").write_text("outside src")
    (toolrig_home / "token").write_text(SECRET)
    return workspace


def rig_for(workspace: Path, **run_command: Any) -> Rig:
    return Rig(
        workspace,
        config={"workspace": {"deny_globs": [".env", "*.key"]}, "tool_config": {"run_command": run_command}},
    )


def run(rig: Rig, command: str) -> ToolResult:
    result = rig.call_sync("run_command", {"command": command})
    assert not result.is_error, result
    return result


READS = [
    "cat {p}",
    "head -c 100 {p}",
    "python3 -c 'import sys; print(open(sys.argv[1]).read())' {p}",
    "cp {p} copied && cat copied",
    "ln -sf {p} soft && cat soft",
    "ln -f {p} hard && cat hard",
    "cat /proc/self/root/$(realpath -m {p})",
]


@pytest.mark.parametrize(
    ("thing", "named"),
    [
        (".env", ".env"),
        ("deep/er/.env", "deep/er/.env"),
        ("made-later.key", "made-later.key"),
        (".toolrig/state.db", ".toolrig/"),
        ("{toolrig_home}/token", "~/.toolrig/"),
        ("~/.ssh/id_ed25519", "~/.ssh"),
    ],
)
def test_every_route_to_a_hidden_thing_is_refused_and_named(
    ws: Path, toolrig_home: Path, thing: str, named: str
) -> None:
    thing = thing.format(toolrig_home=toolrig_home)
    rig = rig_for(ws)
    (ws / ".toolrig").mkdir(exist_ok=True)
    (ws / ".toolrig" / "state.db").write_text(SECRET)
    (ws / "made-later.key").write_text(SECRET)  # after the rig was made: each command's view is made anew
    for route in READS:
        result = run(rig, route.format(p=thing))
        assert SECRET not in result.output["stdout"] + result.output["stderr"], (route, result.output)
        assert result.output["exit_code"] != 0, (route, result.output)
    result = run(rig, f"cat {thing}")
    assert named in (result.output["note"] or ""), result.output
    assert "ask the user" in result.output["note"]
    assert "; bwrap (" in result.output["containment"]


WRITES = [
    "echo pwned > {p}",
    'python3 -c \'import sys; open(sys.argv[1], "w").write("pwned")\' {p}',
    "echo pwned > f && cp f {p}",
    "ln -sf {p} soft && echo pwned > soft",
    "echo pwned | tee {p}",
]


@pytest.mark.parametrize(
    "thing",
    [".toolrig/config.yaml", ".git/hooks/pre-commit", ".git/config", "~/notes.txt", "/var/tmp/toolrig-outside"],
)
def test_every_route_to_write_a_protected_path_is_refused(ws: Path, home: Path, thing: str) -> None:
    rig = rig_for(ws)
    target = Path(thing.replace("~", str(home))) if not thing.startswith(".") else ws / thing
    before = target.read_bytes() if target.exists() else None
    for route in WRITES:
        result = run(rig, route.format(p=thing))
        assert result.output["exit_code"] != 0, (route, result.output)
        assert (target.read_bytes() if target.exists() else None) == before, route
    note = run(rig, f"echo x > {thing}").output["note"] or ""
    assert "read-only for commands" in note or "not visible to commands" in note, note


def test_allowed_routes_work_git_commit_workspace_writes_and_tmp(ws: Path, home: Path) -> None:
    rig = rig_for(ws)
    for route in READS[:-2]:
        assert "in src" in run(rig, route.format(p="src/a.txt")).output["stdout"], route
    assert run(rig, "cat ~/notes.txt").output["stdout"] == "plain"  # the home is readable, its secrets are not
    made = run(rig, "echo made > new.txt && mkdir -p d/e && echo deep > d/e/f && echo t > /tmp/t && cat /tmp/t")
    assert made.output["stdout"] == "t\n" and (ws / "d" / "e" / "f").read_text() == "deep\n"
    committed = run(rig, "git add new.txt src && git -c user.name=a -c user.email=a@b commit -qm one && git log")
    assert committed.output["exit_code"] == 0 and "one" in committed.output["stdout"], committed.output
    assert committed.output["note"] is None


def test_a_narrower_allowed_paths_narrows_the_commands_view(ws: Path) -> None:
    rig = rig_for(ws, allowed_paths=["src/**"])
    assert run(rig, "cat src/a.txt").output["stdout"] == "in src"
    outside = run(rig, "cat other.txt; echo x > other.txt")  # the write lands in an empty stand-in root
    assert "outside src" not in outside.output["stdout"]
    assert (ws / "other.txt").read_text() == "outside src"
    assert run(rig, "echo b > src/b.txt").output["exit_code"] == 0 and (ws / "src" / "b.txt").exists()


class _Origin(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ORIGIN-OK"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def origin() -> Iterator[int]:
    """A real HTTP server on the host's loopback."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


NET_ROUTES = [
    "curl -sS -m 5 {url}",
    "wget -O - -T 5 -t 1 {url}",
    "python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read())' {url}",
]


def test_host_loopback_metadata_and_unlisted_domains_are_refused_by_the_guard_and_named(ws: Path, origin: int) -> None:
    resolver = static_resolver({"allowed.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    rig = Rig(
        ws,
        config={"tool_config": {"run_command": {"allowed_domains": ["allowed.test"]}}},
        http=GuardedHttp(resolver=resolver),
    )
    for url, named in [
        (f"http://127.0.0.1:{origin}/", "127.0.0.1"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        (f"http://other.test:{origin}/", "other.test"),
        (f"http://allowed.test:{origin}/", "127.0.0.1"),  # allowed name, loopback address: the guard's first rule
    ]:
        for route in NET_ROUTES:
            result = run(rig, route.format(url=url))
            assert "ORIGIN-OK" not in result.output["stdout"], (route, result.output)
            assert named in (result.output["note"] or ""), (route, result.output)
    sock = f"import socket; socket.create_connection(('127.0.0.1', {origin}), 2)"
    direct = run(rig, f'exec 3<>/dev/tcp/127.0.0.1/{origin}; python3 -c "{sock}"')
    assert direct.output["exit_code"] != 0  # the namespace's loopback is its own: nothing of the host's


def test_the_guard_lets_through_what_the_config_opens(ws: Path, origin: int) -> None:
    resolver = static_resolver({"allowed.test": ["127.0.0.1"]})
    settings = {"allowed_domains": ["allowed.test"], "allow_loopback": True}
    rig = Rig(ws, config={"tool_config": {"run_command": settings}}, http=GuardedHttp(resolver=resolver))
    for route in NET_ROUTES:
        result = run(rig, route.format(url=f"http://allowed.test:{origin}/"))
        assert "ORIGIN-OK" in result.output["stdout"], (route, result.output)


def test_network_none_reaches_nothing_and_says_so(ws: Path, origin: int) -> None:
    rig = Rig(ws, config={"tool_config": {"run_command": {"network": "none", "allow_loopback": True}}})
    result = run(rig, f"curl -sS -m 2 http://127.0.0.1:{origin}/")
    assert result.output["exit_code"] != 0 and "no network" in (result.output["note"] or ""), result.output


ESCAPES = {
    "unshare": "unshare -Urm true",
    "mount": "mount -t tmpfs none /mnt",
    "remount": "mount -o remount,rw /",
    "umount a mask": "umount {ws}/.env",
    "toolrig's /proc": "cat /proc/{pid}/environ",
    "/proc/PID/root": "ls /proc/{pid}/root/",
    "ptrace": "python3 -c 'import ctypes,sys; sys.exit(ctypes.CDLL(None).ptrace(16, {pid}, 0, 0) != 0)'",
    "setuid": "su -c 'cat {ws}/.env' root </dev/null",
}


@pytest.mark.parametrize("route", sorted(ESCAPES))
def test_escape_attempts_fail(ws: Path, route: str) -> None:
    rig = rig_for(ws)
    result = run(rig, ESCAPES[route].format(ws=ws, pid=os.getpid()))
    assert result.output["exit_code"] != 0, result.output
    assert SECRET not in result.output["stdout"]


def test_no_new_privileges_no_capabilities_and_toolrig_invisible(ws: Path) -> None:
    result = run(rig_for(ws), "grep -E '^(NoNewPrivs|CapEff)' /proc/self/status; ls /proc | grep -c '^[0-9]'")
    lines = result.output["stdout"].split()
    assert lines[lines.index("NoNewPrivs:") + 1] == "1"
    assert lines[lines.index("CapEff:") + 1] == "0000000000000000"
    assert int(lines[-1]) <= 4  # bubblewrap's init, bash, grep/ls: nothing of toolrig's


def test_background_children_die_with_the_command_inside_the_pid_namespace(ws: Path) -> None:
    rig = rig_for(ws)
    seconds = f"60.{secrets.randbelow(10**9):09d}"  # this test's own: another test's `sleep 60` may be running
    wait = f"until pgrep -xf 'sleep {seconds}' >/dev/null; do :; done"  # setsid may not have run sleep yet
    started = run(rig, f"(setsid sleep {seconds} >/dev/null 2>&1 &); {wait}; echo started")
    assert started.output["stdout"] == "started\n", started.output
    left = subprocess.run(["pgrep", "-xf", f"sleep {seconds}"], capture_output=True, check=False)
    assert left.stdout == b""


def test_bubblewrap_confines_an_unprivileged_user_too(tmp_path: Path) -> None:
    """As ``nobody``, user namespaces decide whether bubblewrap works; here they do, and the mask holds."""
    from toolrig.sandbox.confine import View
    from toolrig.sandbox.confine.bwrap import Bubblewrap, find

    with tempfile.TemporaryDirectory(dir="/var/tmp") as made:
        root = Path(made)
        os.chmod(root, 0o777)  # noqa: S103 - nobody writes here
        (root / "secret").write_text(SECRET)
        (root / "secret").chmod(0o644)
        (root / "tmp").mkdir(mode=0o777)
        os.chmod(root / "tmp", 0o777)  # noqa: S103
        bwrap = find(None)
        assert bwrap is not None
        view = View(writable=(str(root),), cwd=str(root), tmp=str(root / "tmp"), hidden_files=(str(root / "secret"),))
        argv = Bubblewrap(bwrap, userns=True).wrap(view, ["sh", "-c", "id -u; cat secret; echo w > written"])
        done = subprocess.run(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv],
            capture_output=True,
            text=True,
            check=False,
            cwd=root,
        )
        assert done.stdout.split()[0] != "0", done
        assert SECRET not in done.stdout and "Permission denied" in done.stderr, done
        assert (root / "written").read_text() == "w\n"


def test_bubblewrap_is_on_this_machine() -> None:
    assert shutil.which("bwrap"), "install bubblewrap (.ci/run does)"
