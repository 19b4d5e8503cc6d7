"""Hostile review of run_command's OS confinement (issue 31): each defect found, as a test that fails today.

Every test here is ``xfail(strict=True)``: it asserts what must hold and fails while the defect is there, so the
suite stays green and the fix flips it (a strict xfail that passes is a failure: remove the mark then). The
findings, their severity and the suggested fixes are in REVIEW.md on the sbxreview branch. A real bubblewrap runs
every command (as root here and in CI); the Landlock cases hide ``bwrap`` from the PATH, as the fallback tests do.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from toolrig.result import ToolResult
from toolrig.rig import Rig

SECRET = "TOP-SECRET-5b1e"


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the workspace and outside /tmp (a command's /tmp is its own), as a host has many."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="sbxreview-") as made:
        yield Path(made).resolve()


@pytest.fixture
def home(outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = outside / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.fixture
def repo(workspace: Path, home: Path, toolrig_home: Path) -> Path:
    """A git repository with one commit, as a model works in."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "a.txt").write_text("a")
    git = ["git", "-C", str(workspace), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    return workspace


def rig_for(workspace: Path, **run_command: Any) -> Rig:
    return Rig(workspace, config={"workspace": {"deny_globs": [".env"]}, "tool_config": {"run_command": run_command}})


def run(rig: Rig, command: str, **options: Any) -> dict[str, Any]:
    result: ToolResult = rig.call_sync("run_command", {"command": command}, **options)
    assert not result.is_error, result
    output: dict[str, Any] = result.output
    return output


def host_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the user runs it next, outside any sandbox (never a command that would run a hook or fsmonitor)."""
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


# ------------------------------------------------------------------------------------------ F1: untrusted config


def test_an_untrusted_workspace_cannot_grant_commands_writes_outside_it(workspace: Path, outside: Path) -> None:
    """``write_paths`` is ``Narrow.INTERSECT``, whose empty base means "all": the repo's own list is adopted."""
    (workspace / ".toolrig").mkdir()
    config = f"tool_config:\n  run_command:\n    write_paths: ['{outside}']\n"
    (workspace / ".toolrig" / "config.yaml").write_text(config)
    out = run(Rig(workspace), f"echo pwned > {outside}/planted")
    assert not (outside / "planted").exists(), out


# ------------------------------------------------------------------------------------------ F2, F3: .git


def test_a_command_cannot_replace_git_to_plant_a_hook_or_fsmonitor(repo: Path) -> None:
    """The masks sit on ``.git/hooks`` and ``.git/config``; ``.git`` itself is a plain directory of a writable root."""
    run(
        rig_for(repo),
        "mv .git .git-old && mkdir .git && cp -a .git-old/. .git/"
        " && printf '#!/bin/sh\\necho ran\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
        " && git config core.fsmonitor 'touch /var/tmp/sbxreview-fsmonitor-ran; false'",
    )
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert host_git(repo, "config", "--get", "core.fsmonitor").stdout == ""


def test_a_command_cannot_redirect_git_config_through_commondir(repo: Path) -> None:
    """git reads ``$GIT_DIR/commondir`` in any repository: config, hooks and refs then come from where it points."""
    run(
        rig_for(repo),
        "cp -a .git evil && git --git-dir=evil config core.fsmonitor 'touch /var/tmp/sbxreview-fsmonitor-ran; false'"
        " && echo ../evil > .git/commondir",
    )
    assert host_git(repo, "config", "--get", "core.fsmonitor").stdout == ""
    assert not (repo / ".git" / "commondir").exists()


def _linked_worktree(repo: Path, outside: Path) -> Path:
    """A linked worktree of ``repo`` outside the workspace: its admin files live in ``repo/.git/worktrees/wt``."""
    linked = outside / "wt"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(linked)], check=True, capture_output=True)
    return linked


def test_a_command_cannot_redirect_a_linked_worktrees_config_through_its_commondir(repo: Path, outside: Path) -> None:
    """git in a linked worktree reads ``.git/worktrees/NAME/commondir``: pointed at a copy, config comes from it."""
    linked = _linked_worktree(repo, outside)
    run(
        rig_for(repo),
        "cp -a .git evil && git --git-dir=evil config core.fsmonitor 'touch /var/tmp/sbxreview-fsmonitor-ran; false'"
        " ; echo $(pwd)/evil > .git/worktrees/wt/commondir",
    )
    assert host_git(linked, "config", "--get", "core.fsmonitor").stdout == ""
    assert (repo / ".git" / "worktrees" / "wt" / "commondir").read_text().strip() == "../.."


def test_a_command_cannot_plant_a_worktree_config_git_trusts(repo: Path, outside: Path) -> None:
    """With ``extensions.worktreeConfig`` (the user's), git reads ``config.worktree`` beside each worktree's files."""
    linked = _linked_worktree(repo, outside)
    host_git(repo, "config", "extensions.worktreeConfig", "true")
    planted = "printf '[core]\\n\\tfsmonitor = touch /var/tmp/sbxreview-fsmonitor-ran\\n' > {}"
    out = run(
        rig_for(repo),
        planted.format(".git/worktrees/wt/config.worktree") + "; " + planted.format(".git/config.worktree"),
    )
    assert host_git(linked, "config", "--get", "core.fsmonitor").stdout == ""
    assert host_git(repo, "config", "--get", "core.fsmonitor").stdout == ""
    assert "config.worktree" in (out["note"] or ""), out


# ------------------------------------------------------------------------------------------ F4: hard links


def test_a_hard_link_made_before_the_command_does_not_reveal_a_denied_file(workspace: Path, home: Path) -> None:
    """The walk masks names the globs match; another name of the same inode (made by the user, a tarball, an
    earlier unconfined tool, or a command before ``.env`` was denied) reads the secret."""
    (workspace / ".env").write_text(SECRET)
    os.link(workspace / ".env", workspace / "notes.txt")
    out = run(rig_for(workspace), "cat notes.txt")
    assert SECRET not in out["stdout"], out


# ------------------------------------------------------------------------------------------ F5: unix sockets


@pytest.fixture
def host_service(outside: Path) -> Iterator[Path]:
    """A service of the host on a unix socket outside /tmp (docker.sock, PostgreSQL, the D-Bus system bus live
    in /run and /var/run): it answers every connection with a banner."""
    path = outside / "service.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)  # noqa: S103 - as the system's services' sockets are
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"HOST-SERVICE-BANNER\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    stop.set()
    server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join(timeout=5)


def test_a_command_cannot_reach_a_host_service_on_a_unix_socket(workspace: Path, host_service: Path) -> None:
    """A read-only mount stops writes, not ``connect()``: every socket in the ro-bound host tree is reachable."""
    out = run(
        rig_for(workspace),
        "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
        f"print(s.recv(100).decode())' {host_service}",
    )
    assert "HOST-SERVICE-BANNER" not in out["stdout"], out


@pytest.mark.parametrize("network", ["none", "guarded"])
def test_a_command_cannot_open_a_unix_socket_but_socketpair_works(workspace: Path, network: str) -> None:
    """The class fix of F5: ``socket(AF_UNIX)`` refused by a seccomp filter in both network modes."""
    out = run(
        rig_for(workspace, network=network),
        'python3 -c \'import socket; a, b = socket.socketpair(); a.send(b"pair-ok"); print(b.recv(9).decode()); '
        "socket.socket(socket.AF_UNIX)'",
    )
    assert "pair-ok" in out["stdout"] and "Operation not permitted" in out["stderr"], out


# ------------------------------------------------------------------------------------------ F6: temp dirs


def test_a_session_cannot_read_another_sessions_temp_dir_when_tmpdir_is_elsewhere(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session temp dirs and the egress sockets live under ``tempfile.gettempdir()``; bwrap hides the host's
    ``/tmp`` only, so with ``TMPDIR=/var/tmp/...`` (a common setting) they are in the read-only view."""
    monkeypatch.setattr(tempfile, "tempdir", str(outside))
    rig = rig_for(workspace)
    run(rig, f"echo {SECRET} > /tmp/mine", session_id="A")
    out = run(rig, f"cat {outside}/toolrig-*/*/mine", session_id="B")
    assert SECRET not in out["stdout"], out


# ------------------------------------------------------------------------------------------ F7: Landlock fallback

LANDLOCK_TOOLS = ("bash", "sh", "cat", "echo", "ls", "git")


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with the usual tools but not bubblewrap (how the fallback tests simulate its absence)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in LANDLOCK_TOOLS:
        found = shutil.which(name)
        assert found is not None
        (bin_dir / name).symlink_to(found)
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))  # not a version manager's shim
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


@pytest.fixture
def loopback_service() -> Iterator[int]:
    """A service on the host's loopback: one banner per connection."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"LOOPBACK-BANNER\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    server.close()
    thread.join(timeout=5)


def test_required_sandbox_with_network_none_does_not_run_with_the_hosts_network(
    workspace: Path, no_bwrap: Path, loopback_service: int
) -> None:
    """Under Landlock (bwrap missing) ``sandbox: required`` is satisfied and ``network: none`` silently does
    nothing: the command reaches the host's loopback. Either refuse (unavailable) or hold the network."""
    result = rig_for(workspace, sandbox="required", network="none").call_sync(
        "run_command",
        {
            "command": 'python3 -c \'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); '
            f"print(s.recv(100).decode())' {loopback_service}"
        },
    )
    assert result.is_error or "LOOPBACK-BANNER" not in result.output["stdout"], result.output


def test_under_landlock_a_session_cannot_read_another_sessions_temp_dir(workspace: Path, no_bwrap: Path) -> None:
    rig = rig_for(workspace)
    run(rig, f"echo {SECRET} > $TMPDIR/mine", session_id="A")
    out = run(rig, f"cat {tempfile.gettempdir()}/toolrig-{os.getuid()}/*/mine", session_id="B")
    assert "; landlock:" in out["containment"], out
    assert SECRET not in out["stdout"], out


@pytest.mark.xfail(
    strict=True,
    reason="sbxreview F4: a narrowed agent reads the parent's file through a hard link (known limit, docs/policy.md)",
)
def test_a_hard_link_inside_allowed_paths_does_not_reveal_a_file_outside_them(workspace: Path, home: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "parent-only.txt").write_text(SECRET)
    os.link(workspace / "parent-only.txt", workspace / "src" / "linked.txt")
    out = run(rig_for(workspace, allowed_paths=["src/**"]), "cat src/linked.txt")
    assert SECRET not in out["stdout"], out


# ------------------------------------------------------------------------------------------ F8: walk, then mount


def test_a_denied_file_moved_between_the_walk_and_the_mounts_stays_hidden(
    workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent command of the same model (parallel tool calls) renames the directory holding ``.env`` after
    this command's view was computed and before bubblewrap mounts it, leaving a decoy at the old name.

    The rename is one a confined command can do (the first call shows it: a mask's parent directory is not a
    mount point in the renaming command's own namespace); the interleaving is made deterministic by running it
    right after the view is computed, where the real race would put it. Fixed either way: that rename refused
    (the test ends there), or the mounts checked against what the walk saw.
    """
    from toolrig.tools import shell

    (workspace / "cfg").mkdir()
    (workspace / "cfg" / ".env").write_text(SECRET)
    rig = rig_for(workspace)
    if run(rig, "mv cfg cfg-moved && mv cfg-moved cfg && echo renamed")["stdout"] != "renamed\n":
        return  # fixed by pinning: no confined command can move a masked path's directory, so no race is left
    computed = shell._view

    def view_then_rename(*args: Any) -> Any:
        view = computed(*args)
        (workspace / "cfg").rename(workspace / "cfg-moved")
        (workspace / "cfg").mkdir()
        (workspace / "cfg" / ".env").write_text("decoy")
        return view

    monkeypatch.setattr(shell, "_view", view_then_rename)
    out = run(rig, "cat cfg-moved/.env")
    assert SECRET not in out["stdout"], out


# ------------------------------------------------------------------------------------------ F9: the hooks git uses


def test_a_command_cannot_write_the_hooks_directory_git_is_configured_to_run(repo: Path) -> None:
    """husky and similar set ``core.hooksPath`` to a directory in the working tree (``.husky/_``); the view
    protects the fixed name ``.git/hooks`` only, so a command plants the hook the user's next commit runs."""
    (repo / ".husky").mkdir()
    assert host_git(repo, "config", "core.hooksPath", ".husky").returncode == 0
    run(rig_for(repo), "printf '#!/bin/sh\\necho ran\\n' > .husky/pre-commit && chmod +x .husky/pre-commit")
    assert not (repo / ".husky" / "pre-commit").exists()


def test_a_symlinked_git_config_or_hooks_is_protected_at_its_target(repo: Path) -> None:
    """``.git/config`` and ``.git/hooks`` as symlinks into the working tree: their targets are what git reads."""
    git = repo / ".git"
    (git / "config").rename(repo / "gitconfig")
    (git / "config").symlink_to(repo / "gitconfig")
    shutil.rmtree(git / "hooks")
    (repo / "hookdir").mkdir()
    (git / "hooks").symlink_to(repo / "hookdir")
    run(rig_for(repo), "echo '[core] fsmonitor = x' >> gitconfig; echo x > hookdir/pre-commit; true")
    assert "fsmonitor" not in (repo / "gitconfig").read_text()
    assert not (repo / "hookdir" / "pre-commit").exists()


# ------------------------------------------------------------------------------------------ F10: litter


def test_the_session_tmp_does_not_collect_a_directory_per_command(workspace: Path) -> None:
    """bubblewrap makes the egress directory's mount point inside the session's temp dir (bound at /tmp) and
    nothing removes it: one empty ``toolrig-egress-*`` per command, for the life of the session."""
    rig = rig_for(workspace)
    for _ in range(3):
        run(rig, "true")
    out = run(rig, "ls -a /tmp")
    assert out["stdout"].count("toolrig-egress-") <= 1, out


# ------------------------------------------------------------------------------------------ F11: Landlock scopes


def test_under_landlock_a_command_cannot_signal_toolrig(workspace: Path, no_bwrap: Path) -> None:
    """No pid namespace under Landlock, and the shim sets no ``LANDLOCK_SCOPE_SIGNAL`` (ABI 6): ``kill -9`` of
    toolrig's own process (the MCP server, the agent) works. ``kill -0`` is the probe here."""
    out = run(rig_for(workspace), f"kill -0 {os.getpid()} && echo signalled")
    assert "; landlock:" in out["containment"], out
    assert "signalled" not in out["stdout"], out


@pytest.fixture
def abstract_service() -> Iterator[str]:
    """A host service on an abstract unix socket (X11, D-Bus session buses, containerd use them)."""
    name = f"\0sbxreview-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"ABSTRACT-BANNER\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield name[1:]
    server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join(timeout=5)


def test_under_landlock_a_command_cannot_reach_an_abstract_socket_of_the_host(
    workspace: Path, no_bwrap: Path, abstract_service: str
) -> None:
    out = run(
        rig_for(workspace),
        'python3 -c \'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect("\\0"+sys.argv[1]); '
        f"print(s.recv(100).decode())' {abstract_service}",
    )
    assert "; landlock:" in out["containment"], out
    assert "ABSTRACT-BANNER" not in out["stdout"], out


def test_under_bwrap_abstract_sockets_of_the_host_are_out_of_reach(workspace: Path, abstract_service: str) -> None:
    """Held (kept as a guard): the abstract namespace is per network namespace, and bwrap makes a new one."""
    out = run(
        rig_for(workspace),
        'python3 -c \'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect("\\0"+sys.argv[1]); '
        f"print(s.recv(100).decode())' {abstract_service}",
    )
    assert "; bwrap (" in out["containment"], out
    assert "ABSTRACT-BANNER" not in out["stdout"], out
    assert "Connection refused" in out["stderr"] or "Operation not permitted" in out["stderr"], out  # (F5's filter)


# ------------------------------------------------------------------------------------------ F12: git under Landlock


def test_under_landlock_git_add_works_or_the_note_names_git(repo: Path, no_bwrap: Path) -> None:
    """``.git`` holds the read-only ``hooks`` and ``config``, so Landlock grants its entries but not ``.git``
    itself: ``index.lock`` cannot be made. Either git works (the issue's "git commit works"), or the model is told."""
    out = run(rig_for(repo), "echo b >> a.txt && git add a.txt")
    assert "; landlock:" in out["containment"], out
    assert out["exit_code"] == 0 or ".git" in (out["note"] or ""), out


# ------------------------------------------------------------------------------------------ F13: newline in a name


def test_a_denied_file_stays_hidden_when_its_directory_is_renamed_to_a_name_with_a_newline(
    workspace: Path, home: Path
) -> None:
    """No race: one command renames the directory (allowed: F2's class), the next reads the file, because the
    deny globs' regexes (pathspec, no DOTALL) do not match across a newline. read_files reads it the same way."""
    (workspace / "cfg").mkdir()
    (workspace / "cfg" / ".env").write_text(SECRET)
    rig = rig_for(workspace)
    run(rig, "mv cfg $'cfg\\n'")
    out = run(rig, "cat $'cfg\\n/.env' cfg/.env")
    assert SECRET not in out["stdout"], out
    read = rig.call_sync("read_files", {"paths": ["cfg\n/.env"]})
    assert read.is_error or SECRET not in str(read.output), read


@given(parent=st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1))
@example(parent="cfg\n")
@settings(max_examples=100, deadline=None)
def test_a_basename_deny_glob_matches_below_any_directory_name(parent: str) -> None:
    from toolrig.sandbox.patterns import compiled

    assume(parent not in (".", ".."))
    assert compiled((".env",)).matches_path_or_parent(f"{parent}/.env") is not None


# ------------------------------------------------------------------------------------------ F14: .toolrig not a dir


@pytest.mark.parametrize("shipped", ["file", "dangling symlink"])
def test_a_command_cannot_make_toolrigs_state_where_the_repository_shipped_a_non_directory(
    workspace: Path, home: Path, toolrig_home: Path, shipped: str
) -> None:
    """The view hides ``.toolrig`` when it is a directory and seals it when it is missing; a repository that
    ships ``.toolrig`` as a file or a dangling symlink (git stores both) gets neither, and a command replaces it
    with toolrig's state directory: config, and files toolrig opens later (its audit database...)."""
    if shipped == "file":
        (workspace / ".toolrig").write_text("not a directory")
    else:
        (workspace / ".toolrig").symlink_to("nowhere")
    run(Rig(workspace), "rm -f .toolrig; mkdir .toolrig && echo 'tool_config: {}' > .toolrig/config.yaml")
    assert not (workspace / ".toolrig" / "config.yaml").exists()


# ------------------------------------------------------------------------------------------ F15: toolrig's own code


def test_a_command_cannot_write_where_toolrig_imports_code_from(
    workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """toolrig installed in the project's own venv (``uv run toolrig``, ``pip install`` into ``.venv``; this very
    worktree runs that way) puts its interpreter and site-packages inside the writable root. A command writes a
    ``.pth`` file (run at toolrig's next start) or a module toolrig imports lazily (run in the live process), both
    on the host, unconfined. Here a site-packages directory in the workspace is put on toolrig's ``sys.path``."""
    site = workspace / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    command = "echo 'import os' > .venv/lib/site-packages/zz-planted.pth"
    rig_for(workspace).call_sync("run_command", {"command": command})  # refusing the call is a fix too
    assert not (site / "zz-planted.pth").exists()


# ------------------------------------------------------------------------------------------ F16: secrets list


MISSING_SECRETS = (
    ".bash_history",  # tokens typed on command lines (export GITHUB_TOKEN=..., curl -H 'Authorization: ...')
    ".zsh_history",
    ".psql_history",
    ".codex/auth.json",  # other agents' OAuth tokens
    ".claude/.credentials.json",
    ".config/github-copilot/hosts.json",
    ".config/rclone/rclone.conf",
    ".s3cfg",
    ".boto",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".composer/auth.json",
    ".config/op/config",  # 1Password CLI
)


def test_common_credential_files_in_the_home_are_hidden(workspace: Path, home: Path) -> None:
    for name in MISSING_SECRETS:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(f"{SECRET} {name}\n")
    out = run(rig_for(workspace), "cat " + " ".join(f"~/{n}" for n in MISSING_SECRETS) + " 2>/dev/null; true")
    leaked = [n for n in MISSING_SECRETS if f"{SECRET} {n}" in out["stdout"]]
    assert not leaked, leaked


def test_a_submodules_config_and_hooks_are_read_only(repo: Path) -> None:
    """The parent's ``git status`` runs git in each submodule, whose config and hooks live in ``.git/modules``."""
    module = repo / ".git" / "modules" / "sub"
    (module / "hooks").mkdir(parents=True)
    (module / "HEAD").write_text("ref: refs/heads/main\n")
    (module / "config").write_text("[core]\n")
    out = run(
        rig_for(repo), "echo '[core] fsmonitor = x' >> .git/modules/sub/config; echo x > .git/modules/sub/hooks/h"
    )
    assert "fsmonitor" not in (module / "config").read_text(), out
    assert not (module / "hooks" / "h").exists()


def test_the_hosts_run_directory_is_not_in_the_view(workspace: Path) -> None:
    """``/run`` holds the host's service sockets (D-Bus, docker.sock, PostgreSQL): the view has an empty one."""
    out = run(rig_for(workspace), "ls -A /run /var/run; ls -ld /run/lock; test -L /run/shm && echo shm-ok")
    for name in ("dbus", "postgresql", "systemd", "docker.sock"):
        assert name not in out["stdout"], out
    assert "shm-ok" in out["stdout"], out


def test_under_landlock_a_hidden_path_in_a_crowded_directory_leaves_the_system_granted(
    repo: Path, no_bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hidden path beside more siblings than the rule bound (TOOLRIG_HOME among every test's temp dirs, in CI)
    stopped the walk there: every grant after it in name order (``/usr``) was dropped and bash could not run."""
    from toolrig.sandbox.confine import landlocked

    crowded = repo.parent / "crowded"
    crowded.mkdir()
    for i in range(40):
        (crowded / f"sibling-{i:02}").mkdir()
    (crowded / "hidden").mkdir()
    monkeypatch.setattr(landlocked, "_MAX_GRANTS", 30)
    rig = Rig(repo, config={"tool_config": {"run_command": {"hidden_paths": [str(crowded / "hidden")]}}})
    out = run(rig, "echo ran; cat /etc/hostname >/dev/null && echo read")
    assert "; landlock:" in out["containment"], out
    assert out["stdout"] == "ran\nread\n", out
