"""run_command: a shell for the model, contained by policy, limits and a killable process tree.

Trust model: the command is hostile. Config patterns judge every simple command a real bash parser finds
in it (an allowlist is the boundary, a denylist a tripwire); the process runs contained by
``toolrig.sandbox.process`` (own group and cgroup, limits, scrubbed environment, killed on timeout).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import secrets
import shlex
import socket
import threading
import weakref
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from pydantic import ConfigDict, Field, field_validator

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.narrowing import Narrow
from toolrig.profiles.windows_bash import ENV as BASH_ENV
from toolrig.profiles.windows_bash import bash_argv
from toolrig.sandbox import command_net
from toolrig.sandbox.allowed import AllowedPathsSettings
from toolrig.sandbox.background import STARTED, Tap, start_job
from toolrig.sandbox.command_cwd import remember_dir, start_dir
from toolrig.sandbox.confine import SandboxUnavailable, View
from toolrig.sandbox.confine.bwrap import setup_failure
from toolrig.sandbox.confine.choose import Choice, choose
from toolrig.sandbox.confine.net import bridge_paths, bridged, egress_for, refusal_notes
from toolrig.sandbox.confine.notes import boundary_note
from toolrig.sandbox.confine.seccomp import filter_memfd
from toolrig.sandbox.confine.tmpdir import session_tmp
from toolrig.sandbox.confine.view import remove_planted, view_for
from toolrig.sandbox.egress import Egress
from toolrig.sandbox.launcher import EXTRA_FD
from toolrig.sandbox.netns import SessionNetwork
from toolrig.sandbox.network import NetworkSettings, Resolver
from toolrig.sandbox.paths import is_within
from toolrig.sandbox.process import DEFAULT_ENV_ALLOW, Limits, ProcessResult, run_contained, scrub_env
from toolrig.sandbox.session import Kind, SessionSandbox
from toolrig.stores.checkpoints.watch import CommandWatch, watched

DEFAULT_SESSION = "default"


class RunCommandConfig(AllowedPathsSettings, NetworkSettings):
    """Settings under ``tool_config.run_command``.

    ``allowed_paths`` narrows what commands see of the workspace, ``allowed_domains`` and the rest of the
    network settings what they reach through the egress proxy.
    """

    model_config = ConfigDict(extra="forbid")

    sandbox: Annotated[Literal["off", "auto", "required"], Narrow.STRICTER] = Field(
        default="auto",
        description=(
            "auto: confine commands with the best mechanism this machine has (bubblewrap, else Landlock, else none; "
            "each result's containment says which); required: refuse to run commands unconfined; off: no "
            "confinement (toolrig already runs inside a container of your own)."
        ),
    )
    network: Annotated[Literal["guarded", "none"], Narrow.STRICTER] = Field(
        default="guarded",
        description=(
            "guarded: commands reach the network only through toolrig's egress proxy, which applies fetch_url's "
            "guard with these settings (allowed_domains, blocked_domains, allow_loopback, allow_networks); "
            "none: no network at all (offline work). Needs the bwrap sandbox; elsewhere containment says so."
        ),
    )
    write_paths: Annotated[list[str], Narrow.GRANT] = Field(
        default_factory=list, description="More directories commands may write (~/.cache/pip); default: none."
    )
    hidden_paths: Annotated[list[str], Narrow.UNION] = Field(
        default_factory=list,
        description="More paths commands may not see, beside ~/.ssh, ~/.aws and the other default secrets.",
    )

    mode: Literal["shell", "argv"] = Field(
        default="shell", description="shell: bash -c; argv: shlex-split and run with no shell (stricter)."
    )
    allow: Annotated[list[str], Narrow.INTERSECT] = Field(
        default_factory=list,
        description="Command patterns ('git *'); when set, every simple command must match one (deny by default).",
    )
    deny: Annotated[list[str], Narrow.UNION] = Field(
        default_factory=list, description="Command patterns refused wherever they appear."
    )
    env_allow: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ENV_ALLOW),
        description="Environment variables passed on (globs; secret-looking names only when named exactly).",
    )
    env_set: dict[str, str] = Field(
        default_factory=lambda: {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "NO_COLOR": "1"},
        description="Variables set for every command.",
    )
    max_timeout_seconds: Annotated[float, Narrow.MIN] = Field(
        default=600.0, gt=0, description="Largest timeout a call may ask for."
    )
    allow_no_timeout: bool = Field(default=False, description="Whether timeout_seconds=-1 (no limit) is allowed.")
    cpu_seconds: int | None = Field(default=None, ge=1, description="CPU-time limit per process (RLIMIT_CPU).")
    memory_mb: int | None = Field(default=None, ge=16, description="Address-space limit per process (RLIMIT_AS).")
    max_processes: int | None = Field(default=512, ge=4, description="Most processes a command may have at once.")
    file_size_mb: int | None = Field(default=None, ge=1, description="Largest file a command may write (RLIMIT_FSIZE).")
    max_output_chars: int = Field(default=50_000, ge=1_000, description="Characters kept per stream (head and tail).")
    max_output_bytes: int = Field(default=64 * 1024 * 1024, ge=1024, description="Bytes per stream before a kill.")
    kill_grace_seconds: float = Field(default=2.0, ge=0, description="Time between SIGTERM and SIGKILL.")
    progress_interval_seconds: float = Field(
        default=1.0, ge=0.05, description="How often a running command reports progress (MCP clients show it)."
    )

    @field_validator("allow", "deny")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern.strip():
                raise ValueError("a command pattern may not be empty")
        return value


class RunCommandInput(ToolInput):
    command: Annotated[str, Subject("command")] = Field(
        description="The command line, e.g. 'pytest -q tests/test_x.py' or 'git status'."
    )
    timeout_seconds: float = Field(
        default=30, description="Seconds before the command is stopped (SIGTERM, then SIGKILL); -1 for no limit."
    )
    cwd: str | None = Field(
        default=None, description="Directory to run in, relative to the workspace; default: where the last call ended."
    )
    background: bool = Field(
        default=False,
        description="Start it and return its id at once (a server, a watcher); read it with command_output.",
    )

    @field_validator("timeout_seconds")
    @classmethod
    def _timeout(cls, value: float) -> float:
        if value != -1 and not value > 0:
            raise ValueError("must be a positive number of seconds, or -1 for no limit")
        return value


class RunCommandOutput(ToolOutput):
    command: str
    stdout: str = Field(description="Standard output; long output keeps its head and tail with a marker between.")
    stderr: str
    exit_code: int | None = Field(description="The exit status; negative when a signal ended the command.")
    timed_out: bool
    duration_ms: float
    cwd: str = Field(description="The working directory after the command, relative to the workspace.")
    stopped: str | None = Field(default=None, description="Why toolrig stopped the command early, if it did.")
    containment: str = Field(
        default="",
        description="What held the command: the sandbox (bwrap, landlock or none, and why), then the process tree.",
    )
    background_id: str | None = Field(default=None, description="The id of a command started in the background.")
    note: str | None = Field(
        default=None,
        description=(
            "What the sandbox refused the command (a hidden or read-only path, no network), or why it started "
            "somewhere else than where the last one ended."
        ),
    )


# What an allow list no longer refuses where the kernel confines the command: each inner command of these is still
# in the analysis (and must match an allowed pattern), and what they do beyond that is held by the sandbox (writes
# only in the workspace, jobs killed with the command, startup files read-only).
KERNEL_HELD = (
    "runs a job in the background (&)",
    "uses command substitution",
    "uses process substitution",
    "redirects output to a file",
    "uses a here-document",
    "starts a nested shell",
    "reads the user's startup files",
)


def judge(
    command: str, config: RunCommandConfig, argv: list[str] | None = None, *, confined: bool = False
) -> str | None:
    """Why config refuses the command, or None. Every simple command inside it must pass.

    ``confined``: the command will run in a sandbox (``containment`` not "none"), so an allow list accepts the
    constructs in ``KERNEL_HELD`` around allowed commands (``bash -lc 'make'``, ``make > log``, ``$(git rev-parse
    HEAD)``, ``server &``) instead of asking for a plain command.
    """
    if not config.allow and not config.deny:
        return None
    from toolrig.sandbox.shell_syntax import analyse, matches

    analysis = analyse(shlex.join(argv) if argv is not None else command)
    if not analysis.parsed:
        return f"it cannot be read reliably ({'; '.join(analysis.reasons)})"
    reasons = [r for r in analysis.reasons if not (confined and any(held in r for held in KERNEL_HELD))]
    if config.allow and reasons:
        return f"only plain commands are allowed here, and this one {'; '.join(reasons)}"
    if not analysis.readable:
        return f"it may run commands that cannot be checked ({'; '.join(analysis.opaque)})"
    for simple in analysis.commands:
        for text in simple.deny_texts:
            for pattern in config.deny:
                if matches(pattern, text):
                    return f"'{text}' matches the deny pattern '{pattern}'"
        if confined and _reads_its_script(simple.argv):
            continue  # `bash -lc 'make test'`: the script's own commands are judged, each on its own
        if config.allow and not any(matches(pattern, simple.text) for pattern in config.allow):
            return f"'{simple.text}' matches no allowed pattern ({', '.join(config.allow)})"
    return None


class RunCommand(Tool[RunCommandInput, RunCommandOutput]):
    name = "run_command"
    group = "shell"
    destructive = True
    open_world = True
    timeout_seconds = math.inf  # the call's own timeout_seconds governs; it kills the process tree itself
    config_model = RunCommandConfig
    description = (
        "Run a shell command in the workspace and get its stdout, stderr and exit code. Use it for builds, tests, "
        "git and other command-line programs. The working directory carries over between calls (cd works), "
        "shell variables do not. Output over 50,000 characters per stream keeps its beginning and end. Commands are "
        "stopped after timeout_seconds (default 30) together with everything they started; their stdin is empty, "
        "so interactive programs will not wait for input (a background one's comes from send_command_input). "
        "Some commands may be refused by policy."
    )

    def refusal(self, input: RunCommandInput, settings: Any) -> tuple[str, str] | None:
        """The configured allow/deny lists, judged at the gate so explain and the audit name them."""
        config = settings if isinstance(settings, RunCommandConfig) else None
        if config is None or not (config.allow or config.deny):
            return None
        argv = _split(input.command) if config.mode == "argv" else None
        why = judge(input.command, config, argv, confined=_confined(config))
        if why is None:
            return None
        setting = "deny" if "deny pattern" in why or not config.allow else "allow"
        return f"tool_config.{self.name}.{setting}", f"the command is refused: {why}"

    async def execute(self, input: RunCommandInput, ctx: ToolContext) -> RunCommandOutput:
        config = ctx.settings(RunCommandConfig)
        argv = _split(input.command) if config.mode == "argv" else None
        refusal = judge(input.command, config, argv, confined=_confined(config))
        if refusal is not None:
            raise ToolError(
                ErrorType.DENIED,
                f"The command is refused: {refusal}.",
                "Run a different command that the policy allows, or ask the user.",
            )
        timeout = _timeout(input.timeout_seconds, config)
        choice = _choose(config)
        key = (str(ctx.workspace.root), ctx.session_id or DEFAULT_SESSION)
        cwds = _session_cwds(ctx)
        cwd, cwd_fd, note = start_dir(input.cwd, cwds.get(key), ctx.workspace)
        if input.background:  # the same containment, in a task of the run that owns it (sandbox.background)
            run = functools.partial(_run_job, ctx, config, choice, input, argv, cwd, cwd_fd)
            job = start_job(
                ctx.background, ctx.agent_id, input.command, run, functools.partial(os.close, cwd_fd),
                call_id=ctx.call_id, session_id=ctx.session_id,
            )  # fmt: skip
            return RunCommandOutput(
                **dict.fromkeys(("stdout", "stderr"), ""), command=input.command, exit_code=None, timed_out=False,
                duration_ms=0, cwd=ctx.workspace.display(cwd), background_id=job.id, note=_joined(note, STARTED),
            )  # fmt: skip
        watch = await CommandWatch.start(ctx.workspace, ctx.checkpoint)  # checkpoints: what the command changes
        try:
            result, view, refused = await _run(ctx, config, choice, input.command, argv, cwd, cwd_fd, timeout)
        finally:
            os.close(cwd_fd)
        if watch is not None:
            await watch.finish()
        planted = remove_planted(view) if view is not None else None
        if view is not None and (why := setup_failure(result.stdout, result.stderr, result.exit_code)):
            raise ToolError(
                ErrorType.DENIED,
                f"The command was not run: its sandbox could not be set up ({why}); a path of the workspace changed "
                "while it was (a symlink swapped in, a directory removed).",
                "Run it again once nothing else is changing the workspace.",
            )
        final = remember_dir(result.final_cwd, cwd, ctx.workspace)
        with _CWDS_LOCK:  # most recently used last; a session at the root needs no entry
            cwds.pop(key, None)
            if final != ctx.workspace.root:
                cwds[key] = final
            while len(cwds) > MAX_SESSIONS:  # sessions come and go (one per sessionless MCP request)
                del cwds[next(iter(cwds))]
        return RunCommandOutput(
            command=input.command,
            stdout=result.stdout,
            stderr=result.stderr,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration_ms=round(result.duration_ms, 3),
            cwd="." if final == ctx.workspace.root else ctx.workspace.display(final),
            stopped=result.stopped,
            containment=f"{result.containment}; {choice.backend.holds()}{_network_words(view, choice, ctx.sandbox)}",
            note=_joined(
                note,
                refused,
                planted,
                boundary_note(view, result.stderr, result.exit_code, input.command) if view is not None else None,
            ),
        )


async def _run_job(ctx: ToolContext, config: RunCommandConfig, choice: Choice, input: RunCommandInput,
    argv: list[str] | None, cwd: Path, cwd_fd: int, out: Tap, err: Tap, stdin_fd: int) -> ProcessResult:  # fmt: skip
    lifetime = ctx.background.limits.lifetime_seconds if ctx.background is not None else None
    async with watched(ctx.workspace, ctx.checkpoint):  # its changes land in the turn that started it
        result, view, _ = await _run(
            ctx, config, choice, input.command, argv, cwd, cwd_fd, lifetime, sinks=(out, err), stdin_fd=stdin_fd
        )
    if view is not None:
        remove_planted(view)
    return result


async def _run(
    ctx: ToolContext,
    config: RunCommandConfig,
    choice: Choice,
    command: str,
    argv: list[str] | None,
    cwd: Path,
    cwd_fd: int,
    timeout: float | None,  # noqa: ASYNC109 - the process is killed at the deadline (run_contained)
    sinks: tuple[Tap, Tap] | None = None,
    stdin_fd: int | None = None,
) -> tuple[ProcessResult, View | None, str | None]:
    """Run the command in this call's view (and, guarded, behind its own egress proxy): result, view, refusals."""
    env = scrub_env(os.environ, config.env_allow, config.env_set)
    env["PWD"] = str(cwd)
    limits = Limits(config.cpu_seconds, config.memory_mb, config.max_processes, config.file_size_mb)
    script = bash_argv(["-c", command] if argv is None else ["-c", 'exec "$@"', "run_command", *argv])
    if script is None:  # Windows without Git Bash or WSL (profiles.windows_bash: seed 003's lookup)
        raise ToolError(ErrorType.UNAVAILABLE, f"No bash found: install Git for Windows or set {BASH_ENV}.")
    view: View | None = None
    launch = _Launch(script, env)
    async with contextlib.AsyncExitStack() as stack:
        if choice.backend.name != "none":
            session = ctx.session_id or DEFAULT_SESSION
            walks = ctx.workspace.deny_globs or ctx.workspace.read_only_globs or config.allowed_paths
            # A walk of the roots goes to a thread; the default view is a few stat calls (a thread hop costs more).
            view = (
                await anyio.to_thread.run_sync(_view, ctx, config, cwd, session)
                if walks
                else _view(ctx, config, cwd, session)
            )
            env["TMPDIR"] = "/tmp" if choice.backend.name == "bwrap" else view.tmp  # noqa: S108 - the private one
            if choice.backend.name == "bwrap" and (filter_fd := filter_memfd()) is not None:
                stack.callback(os.close, filter_fd)
                launch.extra_fds = (filter_fd,)
                view = dataclasses.replace(view, seccomp_fd=EXTRA_FD)
            if choice.backend.name == "bwrap" and config.network == "guarded":
                view = await _guarded(stack, ctx, config, view, launch)
            elif choice.backend.name == "bwrap" and (net := await _session_network(ctx.sandbox, "offline")):
                _join(net, launch)  # a namespace per command costs more than the rest of bubblewrap together
                view = dataclasses.replace(view, joined=True)
            launch.argv = [*launch.before, *choice.backend.wrap(view, launch.argv)]
        result = await run_contained(
            launch.argv,
            cwd=cwd,
            cwd_fd=cwd_fd,
            env=env,
            timeout=timeout,
            limits=limits,
            output_cap=config.max_output_chars,
            max_output_bytes=config.max_output_bytes,
            kill_grace=config.kill_grace_seconds,
            report_cwd=argv is None,
            on_progress=None if sinks else lambda elapsed, message: ctx.progress(elapsed, timeout, message),
            progress_interval=config.progress_interval_seconds,
            extra_fds=launch.extra_fds,
            sinks=sinks,
            stdin_fd=stdin_fd,
        )
        return result, view, refusal_notes(launch.egress) if launch.egress is not None else None


@dataclasses.dataclass
class _Launch:
    """What a command's start is made of, gathered step by step before bubblewrap goes around ``argv``.

    ``before``: what runs before bubblewrap (``nsenter``); ``extra_fds``: descriptors it inherits (5, 6, ...).
    """

    argv: list[str]
    env: dict[str, str]
    before: list[str] = dataclasses.field(default_factory=list)
    extra_fds: tuple[int, ...] = ()
    egress: Egress | None = None


async def _guarded(
    stack: contextlib.AsyncExitStack, ctx: ToolContext, config: RunCommandConfig, view: View, launch: _Launch
) -> View:
    """The command's network: its own proxy (the call's policy), reached in the session's namespace if it can.

    Joined (the quick way): the command enters its session's network namespace (``ctx.sandbox``), where a
    server an earlier command started listens, and its proxy takes only the command's own credential, so a
    narrower caller's command cannot use a wider one's proxy found on the shared loopback. Else (no session
    sandbox, or none on this machine): a namespace of its own and the bridge (one Python start).
    """
    net = await _session_network(ctx.sandbox, "guarded")
    credential = secrets.token_urlsafe(18) if net is not None else None
    launch.egress = egress = await stack.enter_async_context(
        egress_for(config.policy(), _resolver(ctx), credential=credential, unix=net is None)
    )
    if net is not None:
        numbers = _join(net, launch)
        try:
            launch.env.update(command_net.joined(net, egress, fd_numbers=numbers).env)
        except OSError as exc:  # the holder died or did not answer: the next command starts a new namespace
            raise ToolError(
                ErrorType.UNAVAILABLE,
                f"The command was not run: its session's network namespace did not answer ({exc}); it is replaced.",
                "Run the command again.",
            ) from None
        return dataclasses.replace(view, network="guarded", joined=True)
    # A narrowed view empties the roots, and /tmp is the session's own: toolrig's interpreter may live in
    # either (a venv in the repo, a clone under /tmp), and the bridge runs on it inside the view.
    hiding = (*view.emptied, "/tmp")  # noqa: S108 - the host's /tmp, replaced in the view
    kept = tuple(p for p in bridge_paths() if any(is_within(Path(p), Path(r)) for r in hiding))
    # With the filter the bridge gets a connection, not the proxy's directory (no mount point left).
    into = None if launch.extra_fds else egress.directory
    view = dataclasses.replace(view, network="guarded", egress_dir=into, read_only=(*view.read_only, *kept))
    if launch.extra_fds:  # the filter refuses the bridge a unix socket: it gets a connection made here
        conn = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        conn.settimeout(_CONNECT_SECONDS)  # our own listener: queued at once unless its backlog is full
        conn.connect(egress.socket_path)
        launch.extra_fds = (*launch.extra_fds, conn.fileno())
    launch.argv = bridged(egress, launch.argv, fd=EXTRA_FD + 1 if launch.extra_fds[1:] else None)
    return view


def _join(net: SessionNetwork, launch: _Launch) -> tuple[int, ...]:
    """Put the command into ``net`` (``nsenter`` before bubblewrap); the numbers its descriptors get in it."""
    first = EXTRA_FD + len(launch.extra_fds)
    numbers = tuple(range(first, first + len(net.pass_fds())))
    launch.extra_fds = (*launch.extra_fds, *net.pass_fds())
    launch.before = net.join_prefix(*numbers)
    launch.env["__TOOLRIG_CLOSE_FDS"] = " ".join(map(str, numbers))  # the prelude closes them: only nsenter's
    return numbers


async def _session_network(sandbox: SessionSandbox | None, kind: Kind) -> SessionNetwork | None:
    """The session's namespace of ``kind`` (started in a worker thread on first use), or None: one per command."""
    if sandbox is None or sandbox.failure is not None:
        return None
    try:
        if sandbox.started(kind):
            return sandbox.network(kind)
        return await anyio.to_thread.run_sync(sandbox.network, kind)
    except OSError:
        return None  # remembered in ``sandbox.failure``: every later command goes the per-command way at once


_CONNECT_SECONDS = 5.0


def _network_words(view: View | None, choice: Choice, sandbox: SessionSandbox | None) -> str:
    """What held the command's network, and whether it shared its session's namespace (or why not)."""
    if view is None or choice.backend.name != "bwrap":
        return ""
    words = "; network: through the egress proxy's guard" if view.network == "guarded" else "; network: none"
    if view.joined:
        return words + ", in the session's namespace"
    why = sandbox.failure if sandbox is not None else "no session sandbox in this call"
    return f"{words}, in a namespace of its own ({why})" if why else words


def _resolver(ctx: ToolContext) -> Resolver | None:
    """The resolver the call's guarded HTTP uses (a test's injected one), so the proxy decides as fetch_url does."""
    resolver = getattr(ctx.http, "resolver", None)
    return resolver if callable(resolver) else None


_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})


def _reads_its_script(argv: tuple[str, ...]) -> bool:
    """A shell given ``-c SCRIPT`` (its script was read as a nested command line; an unreadable one is opaque)."""
    return (
        bool(argv)
        and os.path.basename(argv[0]) in _SHELLS
        and any(a.startswith("-") and not a.startswith("--") and "c" in a for a in argv[1:4])
    )


def _confined(config: RunCommandConfig) -> bool:
    """Whether this call's command will run in a sandbox (probed once per process; required and missing: False)."""
    try:
        return choose(config.sandbox).backend.name != "none"
    except SandboxUnavailable:
        return False


def _choose(config: RunCommandConfig) -> Choice:
    """The mechanism this call's commands run under (probed once per process); required and missing: an error."""
    try:
        return choose(config.sandbox, network=config.network)
    except SandboxUnavailable as exc:
        raise ToolError(
            ErrorType.UNAVAILABLE,
            f"The command was not run: tool_config.run_command.sandbox is 'required' and {exc}.",
            "Ask the user to install bubblewrap or allow user namespaces (`toolrig sandbox check` says why).",
            retryable=False,
        ) from None


def _view(ctx: ToolContext, config: RunCommandConfig, cwd: Path, session: str) -> View:
    """The view of this call: its workspace and its own settings (an agent's narrower allowed_paths included)."""
    try:
        tmp = session_tmp(str(ctx.workspace.root), session)
    except OSError as exc:
        raise ToolError(ErrorType.UNAVAILABLE, f"The session's temp directory cannot be made: {exc}.") from None
    return view_for(
        ctx.workspace,
        cwd=cwd,
        tmp=tmp,
        allowed_paths=config.allowed_paths,
        write_paths=config.write_paths,
        hidden_paths=config.hidden_paths,
    )


def _joined(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return " ".join(kept) if kept else None


# Where each session's last command ended, kept with the rig's stores (one per rig): the tool instance is
# shared by every rig in the process and holds no session state itself.
_CWDS: weakref.WeakKeyDictionary[object, dict[tuple[str, str], Path]] = weakref.WeakKeyDictionary()
_CWDS_LOCK = threading.Lock()
MAX_SESSIONS = 4096


def _session_cwds(ctx: ToolContext) -> dict[tuple[str, str], Path]:
    with _CWDS_LOCK:
        cwds = _CWDS.get(ctx.stores)
        if cwds is None:
            cwds = _CWDS[ctx.stores] = {}
        return cwds


def _split(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ToolError(ErrorType.INVALID_INPUT, f"The command cannot be split into arguments: {exc}.") from None
    if not argv:
        raise ToolError(ErrorType.INVALID_INPUT, "The command is empty.")
    return argv


def _timeout(requested: float, config: RunCommandConfig) -> float | None:
    if requested == -1:
        if not config.allow_no_timeout:
            raise ToolError(
                ErrorType.DENIED,
                "timeout_seconds=-1 (no limit) is not allowed by the configuration.",
                f"Give a timeout of at most {config.max_timeout_seconds:g} seconds.",
            )
        return None
    if requested > config.max_timeout_seconds:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"timeout_seconds={requested:g} is over the configured maximum of {config.max_timeout_seconds:g}.",
            f"Use at most {config.max_timeout_seconds:g} seconds, or split the work into shorter commands.",
        )
    return requested


TOOLS = [RunCommand()]
