from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig import Rig
from toolrig.errors import ConfigError
from toolrig.result import ToolResult


def shell(workspace: Path, **settings: Any) -> Rig:
    return Rig(workspace, config={"tool_config": {"run_command": settings}} if settings else {})


def run(rig: Rig, command: str, session_id: str | None = None, **args: Any) -> ToolResult:
    return rig.call_sync("run_command", {"command": command, **args}, session_id=session_id)


def test_a_command_returns_its_output_and_exit_code(workspace: Path) -> None:
    result = run(shell(workspace), "echo hello; echo oops >&2; exit 4")
    assert result.output["stdout"] == "hello\n"
    assert result.output["stderr"] == "oops\n"
    assert result.output["exit_code"] == 4
    assert result.output["timed_out"] is False
    assert result.output["cwd"] == "."


def test_the_working_directory_persists_within_a_session_but_variables_do_not(workspace: Path) -> None:
    (workspace / "pkg" / "inner").mkdir(parents=True)
    rig = shell(workspace)
    first = run(rig, "cd pkg && export FLAVOUR=mint && cd inner", session_id="s1")
    assert not first.is_error, first
    assert first.output["cwd"] == "pkg/inner"
    second = run(rig, 'pwd; echo "flavour=${FLAVOUR-unset}"', session_id="s1")
    assert second.output["stdout"] == f"{workspace / 'pkg' / 'inner'}\nflavour=unset\n"
    other = run(rig, "pwd", session_id="s2")
    assert other.output["stdout"] == f"{workspace}\n"


def test_remembered_directories_are_bounded_and_the_least_recent_session_forgets_first(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session per sessionless MCP request (2026-07-28 HTTP) must not grow the table without limit."""
    from toolrig.tools import shell as shell_module

    monkeypatch.setattr(shell_module, "MAX_SESSIONS", 2)
    (workspace / "pkg").mkdir()
    rig = shell(workspace)
    for session in ("a", "b", "c"):
        assert run(rig, "cd pkg", session_id=session).output["cwd"] == "pkg"
    assert run(rig, "pwd", session_id="b").output["stdout"] == f"{workspace / 'pkg'}\n"
    assert run(rig, "pwd", session_id="a").output["stdout"] == f"{workspace}\n"  # forgotten first
    for session in "defgh":
        run(rig, "true", session_id=session)  # sessions that stay at the root keep no entry
    assert run(rig, "pwd", session_id="b").output["stdout"] == f"{workspace / 'pkg'}\n"


def test_an_explicit_cwd_is_used_and_then_remembered(workspace: Path) -> None:
    (workspace / "docs").mkdir()
    rig = shell(workspace)
    assert run(rig, "pwd", cwd="docs").output["stdout"] == f"{workspace / 'docs'}\n"
    assert run(rig, "pwd").output["stdout"] == f"{workspace / 'docs'}\n"


def test_cwd_outside_the_workspace_is_refused(workspace: Path) -> None:
    result = run(shell(workspace), "pwd", cwd="../")
    assert result.error_type == "denied"


def test_a_cd_that_leaves_the_workspace_is_not_carried_into_the_next_call(workspace: Path) -> None:
    rig = shell(workspace)
    left = run(rig, "cd / && pwd")
    assert left.output["stdout"] == "/\n"
    assert left.output["cwd"] == "."
    assert run(rig, "pwd").output["stdout"] == f"{workspace}\n"


def test_a_timeout_stops_the_command_and_says_so(workspace: Path) -> None:
    result = run(shell(workspace), "echo started; sleep 30", timeout_seconds=0.5)
    assert result.output["timed_out"] is True
    assert result.output["stopped"] == "timeout"
    assert result.output["stdout"] == "started\n"
    assert result.output["exit_code"] == -15  # SIGTERM was enough


def test_no_timeout_is_refused_unless_config_allows_it(workspace: Path) -> None:
    refused = run(shell(workspace), "true", timeout_seconds=-1)
    assert refused.error_type == "denied"
    allowed = run(shell(workspace, allow_no_timeout=True), "true", timeout_seconds=-1)
    assert allowed.output["exit_code"] == 0


@pytest.mark.parametrize("timeout", [0, -2, -0.5])
def test_a_timeout_must_be_positive_or_minus_one(workspace: Path, timeout: float) -> None:
    result = run(shell(workspace), "true", timeout_seconds=timeout)
    assert result.error_type == "invalid_input" and "timeout_seconds" in result.message


def test_a_timeout_over_the_configured_maximum_is_refused(workspace: Path) -> None:
    result = run(shell(workspace, max_timeout_seconds=5), "true", timeout_seconds=10)
    assert result.error_type == "invalid_input" and "maximum of 5" in result.message


def test_argv_mode_runs_without_a_shell(workspace: Path) -> None:
    rig = shell(workspace, mode="argv")
    result = run(rig, "echo $HOME '; rm -rf /' `id` \"two words\"")
    assert result.output["stdout"] == "$HOME ; rm -rf / `id` two words\n"
    missing = run(rig, "no-such-program-xyz")
    assert missing.output["exit_code"] == 127


def test_argv_mode_refuses_unbalanced_quotes(workspace: Path) -> None:
    result = run(shell(workspace, mode="argv"), "echo 'unclosed")
    assert result.error_type == "invalid_input"


def test_an_allowlist_admits_matching_commands_only(workspace: Path) -> None:
    rig = shell(workspace, allow=["echo *", "true"])
    assert run(rig, "echo ok && true").output["stdout"] == "ok\n"
    refused = run(rig, "echo ok && ls")
    assert refused.error_type == "denied" and "'ls' matches no allowed pattern" in refused.message


def test_an_allowlist_refuses_commands_that_are_not_plain(workspace: Path) -> None:
    result = run(shell(workspace, allow=["echo *"]), "echo $(whoami)")
    # Confined, the substitution itself is held by the sandbox; an argument it makes could still be an option.
    assert result.error_type == "denied" and "changed by the shell at run time" in result.message
    unconfined = run(shell(workspace, allow=["echo *"], sandbox="off"), "echo $(whoami)")
    assert unconfined.error_type == "denied" and "command substitution" in unconfined.message


def test_output_is_cut_in_the_middle_at_the_configured_size(workspace: Path) -> None:
    result = run(shell(workspace, max_output_chars=1000), "seq 1 100000")
    stdout = result.output["stdout"]
    assert stdout.startswith("1\n2\n3\n")
    assert stdout.endswith("99999\n100000\n")
    assert "characters dropped from the middle" in stdout
    assert len(stdout) < 1100


def test_colour_escapes_are_stripped(workspace: Path) -> None:
    result = run(shell(workspace), r"printf '\033[1;32mgreen\033[0m\n'")
    assert result.output["stdout"] == "green\n"


def test_subjects_are_the_command(workspace: Path) -> None:
    rig = shell(workspace)
    tool = rig.registry.get("run_command")
    assert tool.subjects(tool.input_model(command="git status")) == ["git status"]


def test_a_mistyped_setting_is_a_config_error_with_file_and_line(workspace: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("tool_config:\n  run_command:\n    mode: shell\n    alow: ['git *']\n")
    with pytest.raises(ConfigError) as caught:
        Rig(workspace, config=config).tools()
    assert f"{config}:4" in str(caught.value) and "alow" in str(caught.value)


def test_an_invalid_mode_is_a_config_error(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="mode"):
        Rig(workspace, config={"tool_config": {"run_command": {"mode": "zsh"}}}).tools()


def test_a_running_command_reports_progress_to_the_calls_event_sink(workspace: Path) -> None:
    from toolrig.events import Event, ToolProgressEvent

    class Sink:
        def __init__(self) -> None:
            self.seen: list[Event] = []

        def emit(self, event: Event) -> None:
            self.seen.append(event)

    sink = Sink()
    rig = shell(workspace, progress_interval_seconds=0.05)
    result = rig.call_sync("run_command", {"command": "echo started; sleep 0.6", "timeout_seconds": 10}, events=sink)
    assert not result.is_error, result
    progress = [e for e in sink.seen if isinstance(e, ToolProgressEvent)]
    assert len(progress) >= 2
    assert all(p.name == "run_command" and p.total == 10 for p in progress)
    assert [p.progress for p in progress] == sorted(p.progress for p in progress)
    assert "bytes of output so far" in (progress[-1].message or "")


def test_progress_interval_has_a_floor(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="progress_interval_seconds"):
        shell(workspace, progress_interval_seconds=0.001)


# ------------------------------------------------------------------------ where a command starts
# The directory a command starts in is opened beneath the workspace root without following a symlink, and the
# command starts from that descriptor: nothing checked is walked again by path (a check-then-use race).

# Where the command really is: ``pwd -P`` resolves the logical $PWD again, so it can name a path that was swapped
# since the command started; the kernel's own record of bash's working directory cannot.
WHERE = "readlink /proc/$$/cwd"

# How a command can take away the directory its session's next command would start in (it starts in 'sub').
TAKEN_AWAY = {
    "swapped for a symlink to outside": "cd .. && mv sub sub.old && ln -s {outside} sub && cd sub",
    "swapped for a symlink into toolrig's state": "cd .. && mv sub sub.old && ln -s .toolrig sub && cd sub",
    "deleted": "rmdir ../sub",
    "replaced by a file": "rmdir ../sub && echo text > ../sub",
    "renamed away": "mv ../sub ../elsewhere",
    "left for outside, then renamed away": "cd / && mv {workspace}/sub {workspace}/elsewhere",
}


@pytest.mark.parametrize("how", list(TAKEN_AWAY))
def test_a_remembered_directory_taken_away_is_not_entered_and_the_next_command_starts_at_the_root_saying_why(
    workspace: Path, tmp_path: Path, how: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / ".toolrig").mkdir(exist_ok=True)
    rig = shell(workspace, sandbox="off")  # moves what the sandbox pins (tmp, .toolrig)
    assert run(rig, "mkdir sub && cd sub", session_id="s").output["cwd"] == "sub"
    took = run(rig, TAKEN_AWAY[how].format(outside=outside, workspace=workspace), session_id="s")
    assert not took.is_error and took.output["exit_code"] == 0, took
    after = run(rig, WHERE, session_id="s")
    assert not after.is_error, after
    assert after.output["stdout"] == f"{workspace}\n"
    assert after.output["cwd"] == "."
    assert "'sub'" in after.output["note"] and "workspace root" in after.output["note"], after.output
    again = run(rig, WHERE, session_id="s")
    assert again.output["stdout"] == f"{workspace}\n" and again.output["note"] is None


def swap_after_check(monkeypatch: pytest.MonkeyPatch, requested: str, component: Path, target: Path) -> None:
    """Replace ``component`` by a symlink to ``target`` right after the workspace checked ``requested``.

    That is the window a concurrent call (``Executor.invoke_many``) or another process can use; here it is hit
    every time, not by chance.
    """
    from toolrig.sandbox.paths import Workspace

    resolve = Workspace.resolve
    done: list[bool] = []

    def resolve_then_swap(self: Workspace, path: str, *, write: bool = False) -> Path:
        resolved = resolve(self, path, write=write)
        if path == requested and not done:
            done.append(True)
            component.rename(component.with_name(component.name + ".old"))
            component.symlink_to(target, target_is_directory=True)
        return resolved

    monkeypatch.setattr(Workspace, "resolve", resolve_then_swap)


@pytest.mark.parametrize("requested", ["a", "a/b"])
@pytest.mark.parametrize("into", ["outside", "state"])
def test_a_requested_cwd_swapped_for_a_symlink_after_its_check_is_refused_not_followed(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, requested: str, into: str
) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    target = tmp_path / "outside" if into == "outside" else workspace / ".toolrig"
    (target / "b").mkdir(parents=True, exist_ok=True)
    rig = shell(workspace)
    swap_after_check(monkeypatch, requested, workspace / "a", target)
    result = run(rig, f"{WHERE}; touch here", cwd=requested)
    assert result.is_error and result.error_type == "denied", result
    assert result.next_action_hint
    assert not list(target.rglob("here"))  # nothing ran there


@pytest.mark.parametrize(
    ("requested", "error_type"),
    [
        ("notes.txt", "invalid_input"),
        ("missing", "not_found"),
        ("missing/deeper", "not_found"),
        ("notes.txt/deeper", "not_found"),
        ("out", "denied"),
        (".toolrig", "denied"),
        ("state", "denied"),
        ("../", "denied"),
        ("", "invalid_input"),
    ],
)
def test_a_requested_cwd_that_cannot_be_entered_is_a_clear_error(
    workspace: Path, tmp_path: Path, requested: str, error_type: str
) -> None:
    (workspace / "notes.txt").write_text("text\n")
    (workspace / ".toolrig").mkdir(exist_ok=True)
    (workspace / "out").symlink_to(tmp_path)
    (workspace / "state").symlink_to(workspace / ".toolrig")
    result = run(shell(workspace), "pwd", cwd=requested)
    assert result.is_error and result.error_type == error_type, result
    assert result.next_action_hint, result


def test_a_requested_cwd_through_a_symlink_inside_the_workspace_starts_in_its_target(workspace: Path) -> None:
    (workspace / "real" / "deep").mkdir(parents=True)
    (workspace / "link").symlink_to(workspace / "real")
    rig = shell(workspace)
    result = run(rig, WHERE, cwd="link/deep")
    assert result.output["stdout"] == f"{workspace / 'real' / 'deep'}\n"
    assert result.output["cwd"] == "real/deep"
    assert run(rig, "pwd").output["stdout"] == f"{workspace / 'real' / 'deep'}\n"


def change(workspace: Path, outside: Path, how: str, name: str) -> None:
    """What another process (or a parallel call) does to the tree between two calls of a session."""
    path = workspace / name
    if how == "mkdir":
        with contextlib.suppress(OSError):
            path.mkdir(parents=True, exist_ok=True)
        return
    if how == "state moved here":  # as ``mv .toolrig a`` in a command would; toolrig makes a new one later
        if path.parent.is_dir() and not path.parent.is_symlink():
            remove(path)
            (workspace / ".toolrig").rename(path)
            (workspace / ".toolrig").mkdir()
        return
    if not os.path.lexists(path):
        return
    if how == "rename":
        moved = path.with_name(path.name + ".moved")
        remove(moved)
        path.rename(moved)
        return
    remove(path)
    if how == "symlink to outside":
        path.symlink_to(outside)
    elif how == "symlink into state":
        path.symlink_to(workspace / ".toolrig")
    elif how == "file":
        path.write_text("text\n")


def identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


CHANGES = st.sampled_from(
    ["mkdir", "mkdir", "symlink to outside", "symlink into state", "delete", "file", "rename", "state moved here"]
)
CALL = st.tuples(
    st.none() | st.tuples(CHANGES, st.sampled_from(["a", "a/b"])),  # the change before the call
    st.sampled_from([None, None, "a", "a/b", "."]),  # the cwd asked for
    st.sampled_from(["a", "a/b", "b", "..", "/", ".toolrig", "OUTSIDE"]),  # where the command goes
)


@settings(max_examples=30, deadline=None)
@given(st.lists(CALL, min_size=1, max_size=6))
def test_whatever_happens_to_directories_between_calls_a_command_starts_inside_the_workspace(
    calls: list[tuple[tuple[str, str] | None, str | None, str]],
) -> None:
    """A command starts where it asked, or where the session's last one ended, or at the root with a note.

    Never outside the workspace, never in toolrig's state, whatever its name is now (known by identity: a state
    directory moved away is still toolrig's); a call that asked for nothing never fails.
    """
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp, "ws").resolve()
        outside = Path(tmp, "outside").resolve()
        (workspace / ".toolrig").mkdir(parents=True)
        outside.mkdir()
        (workspace / "a" / "b").mkdir(parents=True)
        with Rig(workspace) as rig:
            last = "."
            states = {identity(workspace / ".toolrig")}
            for before, requested, goes in calls:
                if before is not None:
                    change(workspace, outside, *before)
                    states.add(identity(workspace / ".toolrig"))
                target = str(outside) if goes == "OUTSIDE" else goes
                result = run(rig, f"{WHERE}; cd {target} 2>/dev/null; true", session_id="s", cwd=requested)
                if result.is_error:
                    assert requested is not None, result
                    assert result.error_type in {"denied", "not_found", "invalid_input"}, result
                    assert result.next_action_hint, result
                    continue
                started = Path(result.output["stdout"].splitlines()[0])
                assert started == workspace or workspace in started.parents, result.output
                assert not (started == workspace / ".toolrig" or workspace / ".toolrig" in started.parents)
                assert not {identity(d) for d in (started, *started.parents)} & states, (started, result.output)
                if requested is not None:
                    assert started == Path(os.path.realpath(workspace / requested))
                elif result.output.get("note") is None:
                    assert started == Path(os.path.realpath(workspace / last)), (last, result.output)
                else:
                    assert started == workspace and last != ".", result.output
                last = result.output["cwd"]
                assert not last.startswith("/") and ".." not in last.split("/"), result.output


def test_calls_run_in_parallel_with_one_that_swaps_their_cwd_start_inside_or_are_refused(
    workspace: Path, tmp_path: Path
) -> None:
    """The race the seam above hits every time, here with real concurrency (``Executor.invoke_many``)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "a").mkdir()
    swap = (
        f"for i in $(seq 200); do mv a a.real && ln -s {outside} a && rm a && mv a.real a; done; "
        f"mv a a.real && ln -s {outside} a"
    )
    calls: list[tuple[str, dict[str, Any] | str | None]] = [("run_command", {"command": swap})]
    calls += [("run_command", {"command": f"{WHERE}; touch here", "cwd": "a"}) for _ in range(12)]

    async def all_at_once(rig: Rig) -> list[ToolResult]:
        return await rig.executor.invoke_many(calls)

    with Rig(workspace) as rig:
        results = anyio.run(all_at_once, rig)
    assert not results[0].is_error and results[0].output["exit_code"] == 0, results[0]
    for result in results[1:]:
        if result.is_error:
            assert result.error_type in {"denied", "not_found"} and result.next_action_hint, result
        else:
            assert result.output["stdout"] in {f"{workspace / 'a'}\n", f"{workspace / 'a.real'}\n"}, result.output
    assert not (outside / "here").exists()


def test_a_command_starts_in_a_directory_that_may_be_searched_but_not_listed(workspace: Path) -> None:
    """The start directory goes to the keeper as an O_PATH descriptor; ``fchdir`` enters it as ``cd`` would."""
    (workspace / "sealed" / "inner").mkdir(parents=True)
    (workspace / "sealed").chmod(0o111)
    try:
        rig = shell(workspace)
        assert run(rig, WHERE, cwd="sealed").output["stdout"] == f"{workspace / 'sealed'}\n"
        assert run(rig, WHERE, cwd="sealed/inner").output["stdout"] == f"{workspace / 'sealed' / 'inner'}\n"
    finally:
        (workspace / "sealed").chmod(0o755)


def test_a_state_directory_a_command_renamed_is_neither_remembered_nor_entered(workspace: Path) -> None:
    rig = shell(workspace, sandbox="off")  # moves what the sandbox pins (tmp, .toolrig)
    assert not run(rig, "true").is_error  # the state directory exists from here on
    assert (workspace / ".toolrig").is_dir()
    moved = run(rig, "mv .toolrig x && cd x && pwd", session_id="s")
    assert moved.output["stdout"] == f"{workspace / 'x'}\n"
    assert moved.output["cwd"] == "."  # not remembered: the next command starts at the root
    assert run(rig, WHERE, session_id="s").output["stdout"] == f"{workspace}\n"
    asked = run(rig, WHERE, cwd="x")
    assert asked.is_error and asked.error_type == "denied" and "state" in asked.message, asked


@settings(max_examples=25, deadline=None)
@given(reported=st.binary(max_size=300) | st.sampled_from([b"~nosuchuser", b"~0/x", b"~", b"/", b"..", b"\n", b"a\0b"]))
def test_whatever_a_command_reports_as_its_final_directory_its_result_is_kept(reported: bytes) -> None:
    """The final directory comes from the command (the prelude's trap writes to a descriptor the command can use).

    ``~name`` of no user made ``resolve`` raise RuntimeError: the command's output was lost to an ``internal``
    error (keeprev F3). Whatever it says, the result is the command's, and the next command starts in the workspace.
    """
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp).resolve()
        (workspace / "said").write_bytes(reported)
        rig = shell(workspace)
        result = run(rig, "cat said >&3; exec 3>&-; echo ran", session_id="s")
        assert not result.is_error, result
        assert result.output["stdout"] == "ran\n"
        after = run(rig, WHERE, session_id="s").output["stdout"]
        assert Path(after.rstrip("\n")).is_relative_to(workspace), after


def test_a_state_directory_renamed_by_command_after_command_is_never_a_start_directory(workspace: Path) -> None:
    """Each command renames ``.toolrig`` and makes a new one: more than toolrig holds open (keeprev F2)."""
    rig = shell(workspace, sandbox="off")  # moves what the sandbox pins (tmp, .toolrig)
    assert not run(rig, "echo > marker").is_error  # the state directory exists from here on
    for index in range(20):
        assert run(rig, f"mv .toolrig s{index} && mkdir .toolrig").output["exit_code"] == 0
    for index in (0, 10, 19):
        asked = run(rig, WHERE, cwd=f"s{index}")
        assert asked.is_error and asked.error_type == "denied" and "state" in asked.message, asked
        moved = run(rig, f"cd s{index}", session_id="s")
        assert moved.output["cwd"] == ".", moved
