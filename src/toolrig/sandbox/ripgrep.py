"""Running ripgrep (from the ``ripgrep`` wheel) for searching and listing, with argv built only by us.

Trust model: the pattern, globs and flags come from a model. They reach ripgrep after ``--`` or as the
value of an allowlisted option; ripgrep's config file is disabled, stdin is closed, toolrig's state and
``.git`` are always excluded, and the process is killed at the first cap, timeout or cancellation.
ripgrep walks by path, so a directory swapped for a symlink mid-walk would lead it outside: it runs
confined (``Confinement``, Landlock) to the search root as opened without following links.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from toolrig.cancel import current_token
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox import fdwalk, landlock
from toolrig.sandbox.arglimits import too_long
from toolrig.sandbox.paths import is_within
from toolrig.sandbox.patterns import PatternSet

# Hidden directories worth searching although ripgrep skips hidden files by default.
HIDDEN_DIRS_SEARCHED = (".github", ".gitlab", ".circleci", ".husky", ".agents")
ALWAYS_EXCLUDED = ("!.git", "!.toolrig")


@lru_cache(maxsize=1)
def rg_binary() -> str:
    """The ``rg`` executable shipped by the ``ripgrep`` wheel installed with toolrig (never a system one)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("ripgrep")
    except PackageNotFoundError:
        dist = None
    for file in (dist.files or []) if dist is not None else []:
        if file.name in ("rg", "rg.exe"):
            located = Path(str(file.locate())).resolve()
            if located.is_file() and os.access(located, os.X_OK):
                return str(located)
    raise ToolError(
        ErrorType.UNAVAILABLE,
        "The ripgrep binary is not installed.",
        "Install it with `pip install ripgrep==14.1.0` (toolrig depends on it), then retry.",
        retryable=False,
    )


def _environment() -> dict[str, str]:
    # RIPGREP_CONFIG_PATH would let a file inject flags; --no-config covers it too, this is belt and braces.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPGREP_")}
    env.setdefault("LC_ALL", "C.UTF-8")
    return env


def base_argv(*, hidden: bool = False) -> list[str]:
    argv = [rg_binary(), "--no-config", "--no-ignore-global", "--no-ignore-dot"]
    if hidden:
        argv.append("--hidden")
    return argv


def exclusions(extra: Sequence[str] = (), *, hidden: bool = True) -> list[str]:
    """``--glob`` arguments that keep .git, toolrig's state and the workspace's deny globs out of sight.

    Without ``hidden`` ripgrep neither lists nor enters a hidden entry below the paths it is given (and
    applies no glob to those paths), so a glob naming one hidden entry (``.git``, ``/.toolrig``) cannot
    exclude anything: it is left out, since every glob costs ripgrep a match per entry it walks.
    """
    globs = [*ALWAYS_EXCLUDED, *(f"!{pattern}" for pattern in extra if not pattern.startswith("!"))]
    if not hidden:
        globs = [glob for glob in globs if not _names_a_hidden_entry(glob[1:])]
    return [f"--glob={glob}" for glob in globs]


def _names_a_hidden_entry(glob: str) -> bool:
    """A gitignore-style glob that matches only entries whose own name starts with a dot."""
    body = glob.removeprefix("/").removeprefix("**/").rstrip("/")
    return body[:1] == "." and "/" not in body and body not in (".", "..")


@dataclass
class Confinement:
    """What a ripgrep run may read: below the search root (a descriptor opened without following links)."""

    directories: list[int] = field(default_factory=list)
    files: list[int] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    listed: list[int] = field(default_factory=list)  # carved directories: their names may be listed, nothing more

    def close(self) -> None:
        for fd in (*self.directories, *self.files, *self.listed):
            os.close(fd)
        self.directories.clear()
        self.files.clear()
        self.listed.clear()


def confine_to(root: Path, start: Path, ignore_files: Sequence[Path] = (), hidden: Sequence[str] = ()) -> Confinement:
    """The confinement for searching ``start`` (a directory or file under ``root``, already resolved and checked).

    ripgrep also reads the .gitignore files of the directories above the search root: those are allowed by
    name, as are ``ignore_files`` (they only steer which files are skipped; their text is never shown).
    ``hidden`` (absolute paths: toolrig's state, what the deny globs match; ``confine.view.hidden_below``) are
    carved out in the kernel as well as skipped by ripgrep's globs: the grant is split into the largest pieces
    of ``start`` that hold none of them (``carve``), each opened without following a symlink.
    """
    parts = start.relative_to(root).parts
    confinement = Confinement()
    try:
        if os.path.isdir(start):
            below = [h for h in hidden if is_within(Path(h), start)]
            top = fdwalk.open_dir(root, parts)
            if below:
                try:
                    carve(top, start, below, confinement)
                finally:
                    os.close(top)
            else:
                confinement.directories.append(top)
        else:
            confinement.files.append(fdwalk.open_regular(root, parts))
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(
            ErrorType.NOT_FOUND,
            f"'{start}' disappeared while the call ran.",
            "Something else is changing the workspace; retry once it is stable.",
        ) from None
    above = start if confinement.directories else start.parent
    for directory in (above, *above.parents):
        for name in (".gitignore", ".git/info/exclude"):
            candidate = directory / name
            if os.path.isfile(candidate):
                confinement.paths.append(str(candidate))
    confinement.paths += [str(path) for path in ignore_files]
    return confinement


_MAX_PIECES = 4096


def carve(fd: int, path: Path, hidden: Sequence[str], into: Confinement) -> None:
    """Grant the directory ``fd`` (at ``path``) whole if nothing in ``hidden`` is below it, else its other entries.

    Entries are opened with ``O_NOFOLLOW`` relative to their parent's descriptor: a name swapped for a
    symlink meanwhile is a symlink here, granted nothing (ripgrep does not follow links). A hidden entry is
    granted nothing; past ``_MAX_PIECES`` grants the rest of a directory is left out (not searched).
    """
    inside = [h for h in hidden if is_within(Path(h), path) and Path(h) != path]
    if not inside:
        into.directories.append(os.dup(fd))
        return
    into.listed.append(os.dup(fd))  # ripgrep walks through it; the hidden entry's content stays unreadable
    for entry in sorted(os.listdir(fd)):
        child = path / entry
        if str(child) in hidden or len(into.directories) + len(into.files) >= _MAX_PIECES:
            continue
        try:
            opened = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except NotADirectoryError:
            _grant_file(fd, entry, into)
            continue
        except OSError:
            continue  # a symlink (ELOOP), gone, or unreadable: nothing to grant
        try:
            carve(opened, child, inside, into)
        finally:
            os.close(opened)


def _grant_file(parent: int, name: str, into: Confinement) -> None:
    try:
        opened = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return
    if stat.S_ISREG(os.fstat(opened).st_mode):
        into.files.append(opened)
    else:
        os.close(opened)  # a symlink, device, FIFO or socket: ripgrep has nothing to read there


@dataclass
class RgRun:
    r"""A running ripgrep whose stdout is read line by line (split on ``\\n`` only)."""

    argv: list[str]
    cwd: Path
    timeout: float
    confinement: Confinement | None = None
    timed_out: bool = False
    stopped: bool = False
    confined: bool = False
    _process: subprocess.Popen[bytes] | None = None
    _stderr: IO[bytes] | None = None
    _errors: str = ""
    _timer: threading.Timer | None = None
    lines_read: int = field(default=0)

    def __enter__(self) -> RgRun:
        env = _environment()
        if why := too_long(self.argv, env):
            if self.confinement is not None:
                self.confinement.close()
            raise ToolError(
                ErrorType.INVALID_INPUT, f"The search cannot be started: {why}.", "Shorten the pattern or the globs."
            )
        self._stderr = tempfile.TemporaryFile()
        options: dict[str, Any] = {
            "cwd": self.cwd,
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.PIPE,
            "stderr": self._stderr,
            "env": env,
            "bufsize": 1 << 16,
        }
        if self.confinement is None:
            self._process = subprocess.Popen(self.argv, **options)  # noqa: S603 - argv is built by us, never a shell
        else:
            try:
                self._process, self.confined = landlock.spawn(
                    self.argv,
                    directories=self.confinement.directories,
                    files=self.confinement.files,
                    paths=self.confinement.paths,
                    listed=self.confinement.listed,
                    **options,
                )
            finally:
                self.confinement.close()
        self._timer = threading.Timer(self.timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def _expire(self) -> None:
        self.timed_out = True
        self.stop()

    def stop(self) -> None:
        """Kill ripgrep: the caps are reached, time is up, or the call was cancelled."""
        self.stopped = True
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()

    @property
    def stdout(self) -> IO[bytes]:
        if self._process is None or self._process.stdout is None:
            raise RuntimeError("ripgrep is not running: use RgRun as a context manager")
        return self._process.stdout

    def records(self, separator: bytes) -> Iterator[bytes]:
        """Output split on ``separator`` (NUL for ``--null`` file lists), streamed as it arrives."""
        token = current_token()
        buffer = b""
        fd = self.stdout.fileno()
        while chunk := os.read(fd, 1 << 16):
            if token is not None and token.cancelled:
                self.stop()
                return
            *done, buffer = (buffer + chunk).split(separator)
            yield from done
        if buffer and not self.stopped:
            yield buffer

    def lines(self) -> Iterator[bytes]:
        token = current_token()
        for line in self.stdout:
            if token is not None and token.cancelled:
                self.stop()
                break
            self.lines_read += 1
            yield line

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        process = self._process
        if process is not None:
            if process.poll() is None:
                process.kill()
            if process.stdout is not None:
                process.stdout.close()
            process.wait()
        handle = self._stderr
        if handle is not None:
            handle.seek(0)
            self._errors = handle.read(8192).decode("utf-8", errors="replace").strip()
            handle.close()

    def errors(self) -> str:
        """What ripgrep printed on stderr (regex errors, unreadable files), trimmed; read after the run."""
        return self._errors

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode


def list_files(
    cwd: Path,
    paths: Sequence[str],
    *,
    extra: Sequence[str] = (),
    deny: Sequence[str] = (),
    hidden: bool = False,
    timeout: float = 30.0,
    confinement: Confinement | None = None,
) -> Iterator[tuple[list[str], bool]]:
    """Files under ``paths`` that git does not ignore (``rg --files``), relative to ``cwd`` (no leading ``./``).

    Yields batches as ripgrep finds them, so a caller can work on them (stat, filter) while ripgrep walks on;
    closing the generator stops ripgrep. Each batch comes with ``plain``: True when none of its names has a
    component starting with a dot (one search of the chunk, so a filter need not look at each name). Raises
    ``timeout`` if the walk takes longer than ``timeout``.
    """
    argv = [*base_argv(hidden=hidden), "--files", "--null"]
    argv += extra  # trusted arguments (a GlobFilter's)
    argv += exclusions(deny, hidden=hidden)
    argv += ["--", *paths]
    only_dot = list(paths) == ["."]  # every name then starts with "./": split on "\0./", no replace pass
    with RgRun(argv, cwd, timeout, confinement) as run:
        buffer = b""
        fd = run.stdout.fileno()
        token = current_token()
        while chunk := os.read(fd, 1 << 17):
            if token is not None and token.cancelled:
                run.stop()
                return
            complete, _, buffer = (buffer + chunk).rpartition(b"\0")
            if complete:
                # One decode, one split and one './' strip per chunk, not per name. Every name is stripped, not
                # only when the chunk starts with one: with two search paths their names interleave.
                text = os.fsdecode(complete)
                if only_dot:
                    yield text[2:].split("\0./"), "/." not in text  # "./.x" holds "/." too
                    continue
                text = text.replace("\0./", "\0")
                text = text[2:] if text.startswith("./") else text
                yield text.split("\0"), text[:1] != "." and "\0." not in text and "/." not in text
    if run.timed_out:
        raise ToolError(
            ErrorType.TIMEOUT,
            f"Listing files took longer than {timeout:g} seconds and was stopped.",
            "Use a narrower cwd or pattern.",
        )


@dataclass
class GlobFilter:
    """A model's globs as ripgrep arguments that keep .gitignore in force, plus a check ripgrep cannot do.

    ripgrep's own ``--glob`` whitelists a matching file even when it is gitignored or hidden, so positive
    globs go in as a file type (which filters names after the ignore rules); the directory part of a glob
    like ``src/**/*.py`` is checked here, on the paths ripgrep prints. Negations stay ``--glob=!...``.
    """

    argv: list[str]
    directories: PatternSet | None = None
    typed: bool = False

    def accepts(self, rel: str) -> bool:
        if rel[:2] == "./":
            rel = rel[2:]
        if self.typed and (rel[:1] == "." or "/." in rel) and not _visible(rel):
            return False  # a file type lets hidden files through; keep them out as a plain listing does
        return self.directories is None or self.directories.matches(rel)

    def keep(self, names: list[str], plain: bool = False) -> list[str]:
        """The names of one batch this filter accepts: the whole batch at once when none can be refused.

        A type-only filter refuses only names with a hidden component; ``plain`` (no name has one, as
        ``list_files`` tells) or one search of the joined batch rules that out for most batches, instead of
        a Python call per name.
        """
        if self.directories is None:
            if not self.typed or plain:
                return names
            joined = "\0".join(names)
            if joined[:1] != "." and "\0." not in joined and "/." not in joined:
                return names
        return [name for name in names if self.accepts(name)]


TYPE_NAME = "toolrigglob"


def glob_filter(patterns: Sequence[str], prefix: str, *, hidden: bool = False) -> GlobFilter:
    """Build the filter for globs written relative to ``prefix`` (a directory relative to ripgrep's cwd)."""
    from toolrig.sandbox.rgflags import rebase_glob

    positives = [p.removeprefix("./") for p in patterns if not p.startswith("!")]
    argv = [f"--glob={rebase_glob(p, prefix)}" for p in patterns if p.startswith("!")]
    if not positives:
        return GlobFilter(argv)
    typed = not hidden
    names = []
    with_dirs = False
    for pattern in positives:
        body = pattern.rstrip("/")
        last = body.rsplit("/", 1)[-1]
        names.append("*" if last == "**" else last)
        with_dirs |= "/" in body.removeprefix("**/")
    argv += [f"--type-add={TYPE_NAME}:{name}" for name in dict.fromkeys(names)]
    argv.append(f"--type={TYPE_NAME}")
    directories = None
    if with_dirs:
        # Name-only globs stay as they are (any directory under the search path); the rest anchor at prefix.
        rebased = [rebase_glob(p, prefix) for p in positives]
        try:
            directories = PatternSet(rebased, braces=True)
        except ValueError as exc:  # too many brace expansions, or a pattern pathspec cannot compile
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"The glob cannot be used: {str(exc)[:200]}.",
                "Use a simpler glob such as '**/*.py' (at most 256 brace alternatives).",
            ) from None
    return GlobFilter(argv, directories, typed=typed)


def _visible(rel: str) -> bool:
    """No hidden component, except the hidden directories searched on purpose."""
    return all(not part.startswith(".") or part in HIDDEN_DIRS_SEARCHED for part in rel.split("/"))
