"""The view one call's command gets, derived from the policy the file tools obey for that call.

One policy, not a second list: the roots, ``deny_globs`` (rules on every tool's paths included: the rig folds
them in), ``read_only``/``read_only_globs`` and toolrig's state all come from the call's ``Workspace``, and the
call's ``allowed_paths`` narrow it the way they narrow read_files and write_file. Added for commands only: the
user's secrets outside the workspace (``DEFAULT_SECRETS`` under the home directory, plus config's), which no file
tool can reach anyway, and what git or toolrig would later run (``.git/hooks``, ``.git/config``: read-only).

Deny globs are matched by a walk of the roots per command, so a file an earlier command made is hidden from the
next; the walk is skipped when no glob or ``allowed_paths`` asks for one (the default config). A symlink is never
masked itself: a mask would be mounted on its target (outside, or missing: the sandbox would not start); what it
points to is hidden where that is denied. A file a command makes during its own run is not re-matched (it wrote
it). Paths keep their names inside the view, so the final directory a command reports is a host path.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from toolrig.errors import ToolError
from toolrig.sandbox.confine import View
from toolrig.sandbox.confine.tmpdir import is_session_base
from toolrig.sandbox.paths import GIT_DIR_NAME, STATE_DIR_NAME, Workspace, is_within, toolrig_home
from toolrig.sandbox.patterns import PatternSet, compiled

DEFAULT_SECRETS = (
    ".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", ".docker/config.json", ".kube", ".config/gcloud",
    ".azure", ".config/gh", ".config/hub", ".npmrc", ".pypirc", ".pgpass", ".vault-token", ".password-store",
    ".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json", ".local/share/keyrings",
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
    ".thunderbird", ".local/share/password-store",
    # tokens typed on command lines, other agents' OAuth files, cloud and package-registry credentials
    ".bash_history", ".zsh_history", ".zhistory", ".histfile", ".local/share/fish/fish_history", ".psql_history",
    ".mysql_history", ".python_history", ".node_repl_history", ".sqlite_history", ".rediscli_history",
    ".codex/auth.json", ".claude/.credentials.json", ".config/github-copilot", ".config/rclone", ".s3cfg",
    ".boto", ".m2/settings.xml", ".m2/settings-security.xml", ".gradle/gradle.properties", ".composer/auth.json",
    ".config/composer/auth.json", ".config/op", ".op", ".yarnrc.yml", ".config/hcloud", ".config/doctl",
    ".oci", ".config/heroku", ".netlify", ".config/netlify", ".fly", ".config/gh-copilot", ".npm/_auth",
    ".gem/credentials", ".nuget/NuGet/NuGet.Config", ".config/pip/pip.conf", ".pip/pip.conf",
    ".config/containers/auth.json", ".config/sops", ".config/age", ".wrangler", ".config/wrangler",
)  # fmt: skip
_WALK_SECONDS = 30.0
_MAX_WALK = 200_000  # entries looked at per root; past it the walk stops (a note says deny globs hold partly)


def view_for(
    workspace: Workspace,
    *,
    cwd: Path,
    tmp: str,
    allowed_paths: Sequence[str] = (),
    write_paths: Sequence[str] = (),
    hidden_paths: Sequence[str] = (),
) -> View:
    """The view for one call: ``allowed_paths`` and the extra path lists are that call's settings."""
    home = Path.home()
    labels: dict[str, str] = {}
    hidden_dirs: list[str] = []
    hidden_files: list[str] = []
    read_only: list[str] = []
    planted: list[str] = []
    sealed: list[str] = []
    for path, label in _secrets(home, hidden_paths):
        (hidden_dirs if path.is_dir() else hidden_files).append(str(path))
        labels[str(path)] = label
    sessions = os.path.dirname(tmp)  # every session's temp dir: this one is bound at /tmp, the others hidden
    labels[sessions] = "other sessions' temp directories"
    if is_session_base(sessions) and not is_within(Path(sessions), Path("/tmp")):  # noqa: S108 - else hidden by /tmp
        hidden_dirs.append(sessions)
    roots = [str(root) for root in workspace.roots]
    narrowed = compiled_allowed(allowed_paths)
    writable = [] if workspace.read_only else _writable(workspace, narrowed)
    if workspace.read_only:
        read_only.extend(roots)
    extra = [str(Path(p).expanduser().resolve()) for p in write_paths]
    writable.extend(p for p in extra if os.path.isdir(p))
    for root in workspace.roots:
        state = root / STATE_DIR_NAME
        labels[str(state)] = f"{STATE_DIR_NAME}/"
        if state.is_dir() and not state.is_symlink():
            hidden_dirs.append(str(state))
        elif not state.exists() and not state.is_symlink() and not workspace.read_only and os.access(root, os.W_OK):
            sealed.append(str(state))  # made empty and read-only: a command cannot create toolrig's config
        elif not workspace.read_only:
            planted.append(str(state))  # a file or symlink (no mount holds its name): a directory made is removed
        git = root / GIT_DIR_NAME
        if git.is_dir() and not git.is_symlink():
            _protect_git(git, read_only, sealed, labels, writable=not workspace.read_only and os.access(git, os.W_OK))
            _protect_modules(git, read_only, labels)
            for admin in (git, *_worktrees(git)):  # each linked worktree's files redirect git as the main ones do
                _protect_trusted(git, admin, read_only, planted, labels)
    if workspace.deny_globs or workspace.read_only_globs:
        for root in workspace.roots:
            _walk_globs(workspace, root, hidden_dirs, hidden_files, read_only, labels)
    read_only.extend(_own_code(writable))
    hidden_files += _other_names(workspace, hidden_files, labels)
    start = str(cwd)
    if narrowed is not None and not any(is_within(cwd, Path(w)) for w in writable):
        start = str(workspace.root)
    hidden_dirs = _outermost(hidden_dirs)
    hidden_files = [f for f in hidden_files if not any(is_within(Path(f), Path(d)) for d in hidden_dirs)]
    pinned = _pins(writable, (*read_only, *sealed, *hidden_dirs, *hidden_files))
    return View(
        writable=tuple(writable),
        cwd=start,
        tmp=tmp,
        read_only=tuple(read_only),
        emptied=tuple(roots) if narrowed is not None else (),
        pinned=pinned,
        planted=tuple(planted),
        sealed=tuple(sealed),
        hidden_dirs=tuple(hidden_dirs),
        hidden_files=tuple(hidden_files),
        labels=labels,
    )


def hidden_below(workspace: Workspace, root: Path) -> list[str]:
    """What ripgrep must not read below ``root`` either: toolrig's state and what the deny globs match there.

    The same matching as a command's view (one ripgrep listing of candidates, judged by the file tools'
    patterns), so code_search and glob are carved by the policy run_command is (``ripgrep.carve``).
    """
    hidden = [str(p) for p in (root / STATE_DIR_NAME, *workspace.protected) if is_within(p, root) and p.exists()]
    if workspace.deny_globs:
        dirs: list[str] = []
        files: list[str] = []
        _walk_globs(workspace, root, dirs, files, [], {})
        hidden += _outermost(dirs) + files
    return list(dict.fromkeys(hidden))


def _outermost(paths: list[str]) -> list[str]:
    """Each hidden directory once, none inside another: a mask mounted inside an unreadable one cannot be made."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(is_within(Path(path), Path(k)) for k in kept):
            kept.append(path)
    return kept


def _other_names(workspace: Workspace, hidden: Sequence[str], labels: dict[str, str]) -> list[str]:
    """Every other name in the roots of a hidden file that has more than one: deny globs match names, not files.

    A hard link made before the command (by the user, a tarball, a command run before the glob was added) would
    read the secret. Rare, so the full walk of the roots is paid only when a hidden file has ``st_nlink > 1``.
    """
    linked: dict[tuple[int, int], str] = {}
    for path in hidden:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            linked[(info.st_dev, info.st_ino)] = labels.get(path, path)
    if not linked:
        return []
    found: list[str] = []
    seen = set(hidden)
    for root in workspace.roots:
        for path, is_dir, _ in _entries(root):
            if is_dir or path in seen:
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            label = linked.get((info.st_dev, info.st_ino))
            if label is not None:
                found.append(path)
                labels[path] = f"{path[len(str(root)) + 1 :]} (a hard link to {label})"
    return found


def _own_code(writable: Sequence[str]) -> list[str]:
    """Where toolrig's own interpreter and imports live, when that is inside a writable path (a project's venv).

    A ``.pth`` file or a module written there runs in toolrig itself, on the host, unconfined. A writable path
    itself is never made read-only here (``python -m`` puts the working directory on ``sys.path``).
    """
    own: list[str] = []
    for entry in (sys.prefix, sys.exec_prefix, *sys.path):
        if not entry:
            continue
        real = os.path.realpath(entry)
        if (
            real not in own
            and os.path.isdir(real)
            and any(is_within(Path(real), Path(w)) and real != w for w in writable)
        ):
            own.append(real)
    return [p for p in own if not any(p != q and is_within(Path(p), Path(q)) for q in own)]


def _pins(writable: Sequence[str], protected: Sequence[str]) -> tuple[str, ...]:
    """Every directory between a writable path and a protected path below it, parents first.

    Linux refuses to rename or remove a mount point, not a directory that holds one: without these,
    ``mv .git .git-old && mkdir .git`` leaves the masks on the old name, and a concurrent command's rename between
    another's walk and its mounts lands a mask on a decoy. Both writable paths and protected ones are mount
    points already; a directory holding several protected paths is pinned once (a few mounts per command).
    """
    pins: set[str] = set()
    for path in protected:
        top = next((w for w in writable if path != w and is_within(Path(path), Path(w))), None)
        if top is None:
            continue
        parent = os.path.dirname(path)
        while parent != top and len(parent) > len(top) and parent not in pins:
            pins.add(parent)
            parent = os.path.dirname(parent)
    return tuple(sorted(pins, key=lambda p: (p.count("/"), p)))


def compiled_allowed(patterns: Sequence[str]) -> PatternSet | None:
    return PatternSet(patterns, braces=True) if patterns else None


def _secrets(home: Path, extra: Sequence[str]) -> Iterator[tuple[Path, str]]:
    """The user's secrets and toolrig's home that exist, as real paths (a symlinked ``~/.ssh`` masks its target)."""
    seen: set[str] = set()
    candidates = [(home / name, f"~/{name}") for name in DEFAULT_SECRETS]
    candidates.append((toolrig_home(), f"~/{STATE_DIR_NAME}/"))
    runtime = Path(f"/run/user/{os.getuid()}")
    candidates.append((runtime, f"{runtime} (the user's agent sockets: ssh, gpg, keyring, D-Bus)"))
    for spelled in extra:
        candidates.append((Path(spelled).expanduser(), spelled))
    for path, label in candidates:
        if not os.path.lexists(path):  # most are absent: one lstat, not a resolve's several
            continue
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if str(real) in seen or str(real) == "/":
            continue
        seen.add(str(real))
        yield real, label


def _writable(workspace: Workspace, narrowed: PatternSet | None) -> list[str]:
    """The roots, or with ``allowed_paths`` the topmost entries of each root they match."""
    if narrowed is None:
        return [str(root) for root in workspace.roots]
    found: list[str] = []
    for root in workspace.roots:
        for path, is_dir, prune in _entries(root):
            rel = path[len(str(root)) :].lstrip("/")
            if narrowed.matches(rel, is_dir=is_dir):
                found.append(path)  # what is below comes with it
                prune()
    return found


def _protect_git(git: Path, read_only: list[str], sealed: list[str], labels: dict[str, str], *, writable: bool) -> None:
    """``.git/hooks``, ``.git/config`` and what they lead to read-only: git runs what they name on the next commit.

    A symlinked ``hooks`` or ``config`` is protected at its target (resolved; only a target inside a writable path
    needs it); so are the hooks directory ``core.hooksPath`` names (husky's ``.husky``) and any config file an
    ``include`` pulls in, found by asking git when a config mentions either (``_configured``).
    """
    hooks, config = git / "hooks", git / "config"
    labels[str(hooks)] = ".git/hooks"
    labels[str(config)] = ".git/config"
    for path in (hooks, config):
        real = Path(os.path.realpath(path))
        if real != path:
            labels[str(real)] = labels[str(path)]
        if real.exists():
            read_only.append(str(real))
        elif path == hooks and writable and real.parent.is_dir() and not real.parent.is_symlink():
            sealed.append(str(real))  # made empty and read-only (a dangling link's target too)
    for named, label in _configured(git.parent, config):
        if named in ("/", str(git.parent)):
            continue  # hooksPath "." would freeze the whole root: the user's own choice, left as it is
        labels.setdefault(named, label)
        if os.path.exists(named):
            read_only.append(named)
        elif writable and os.path.isdir(os.path.dirname(named)):
            sealed.append(named)


# Files in $GIT_DIR (and in each linked worktree's ``.git/worktrees/NAME``) that redirect where git reads its
# config and hooks (gitrepository-layout(5)): one there is read-only; an absent one cannot be sealed by a mount
# without making it (an empty ``commondir`` breaks git), so a new one is removed after the command.
_TRUSTED_NAMES = ("commondir", "config.worktree")
_MAX_MODULES = 256


def _worktrees(git: Path) -> list[Path]:
    """The admin directories of linked worktrees (``git worktree add``), bounded."""
    top = git / "worktrees"
    if not top.is_dir() or top.is_symlink():
        return []
    try:
        return [Path(e.path) for e in os.scandir(top) if e.is_dir(follow_symlinks=False)][:_MAX_MODULES]
    except OSError:
        return []


def _protect_trusted(git: Path, admin: Path, read_only: list[str], planted: list[str], labels: dict[str, str]) -> None:
    """``admin``'s files git trusts as configuration read-only, the absent ones removed after the command.

    A linked worktree's own ``config`` and ``hooks`` do not exist in git's layout; its ``commondir`` leads git (run
    in that worktree, perhaps outside the workspace) to the config and hooks it uses.
    """
    for name in _TRUSTED_NAMES:
        path = admin / name
        if path.is_file() and not path.is_symlink():
            read_only.append(str(path))
            labels[str(path)] = os.path.relpath(path, git.parent)
        elif not os.path.lexists(path):
            planted.append(str(path))


def _protect_modules(git: Path, read_only: list[str], labels: dict[str, str]) -> None:
    """Each submodule's ``config`` and ``hooks`` read-only (the parent's ``git status`` runs git in them)."""
    modules = git / "modules"
    if not modules.is_dir() or modules.is_symlink():
        return
    stack, seen = [modules], 0
    while stack and seen < _MAX_MODULES:
        top = stack.pop()
        seen += 1
        try:
            entries = [e for e in os.scandir(top) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            if os.path.isfile(os.path.join(entry.path, "HEAD")):
                for name in ("config", "hooks"):
                    path = os.path.join(entry.path, name)
                    if os.path.exists(path) and not os.path.islink(path):
                        read_only.append(path)
                        labels[path] = os.path.relpath(path, git.parent)
            stack.append(Path(entry.path))  # nested submodules live below their parent's module dir


def remove_planted(view: View) -> str | None:
    """Remove what a command made at a name git trusts (``.git/commondir``); a note saying so, or None.

    Run after the command and every process of it are gone (its pid namespace died with it), so nothing
    rewrites it behind this; until then, a git run by the user on the host would follow it (a window as long as
    the command).
    """
    removed = []
    for path in view.planted:
        if os.path.basename(path) == STATE_DIR_NAME and not (os.path.isdir(path) and not os.path.islink(path)):
            continue  # the file or symlink the repository shipped: only a directory made in its place is removed
        if os.path.lexists(path):
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
            except OSError:
                continue
            removed.append(os.path.basename(path))
    if not removed:
        return None
    return f"toolrig removed {', '.join(removed)}: commands may not redirect what git trusts or make toolrig's state."


_GIT_SECONDS = 10.0
_ASKS_GIT = ("hookspath", "include")


def _configured(top: Path, config: Path) -> list[tuple[str, str]]:
    """The hooks directory and the included config files git would use in ``top``, when a config says so.

    Asked of git itself (one ``git config --list`` run, which runs nothing a config names) only when the repo's or
    the user's config mentions ``hooksPath`` or ``include``: most repositories have neither, and git costs ~2 ms.
    """
    home = Path.home()
    texts = []
    for candidate in (config, home / ".gitconfig", home / ".config" / "git" / "config"):
        try:
            texts.append(candidate.read_text(errors="replace").lower())
        except OSError:
            continue
    if not any(word in text for text in texts for word in _ASKS_GIT):
        return []
    try:
        done = subprocess.run(
            ["git", "config", "--show-origin", "--list", "-z", "--includes"],  # noqa: S607
            cwd=top,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=_GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    found: list[tuple[str, str]] = []
    fields = os.fsdecode(done.stdout).split("\0")
    for origin, entry in zip(fields[::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        if origin.startswith("file:"):
            found.append((os.path.realpath(top / os.path.expanduser(origin[5:])), origin[5:]))
        if key == "core.hookspath" and value:
            found.append((os.path.realpath(top / os.path.expanduser(value)), f"{value} (core.hooksPath)"))
    return found


def _walk_globs(
    workspace: Workspace,
    root: Path,
    hidden_dirs: list[str],
    hidden_files: list[str],
    read_only: list[str],
    labels: dict[str, str],
) -> None:
    """Hide what the deny globs match below ``root`` and freeze what the read-only globs match.

    ripgrep lists the candidates (every file a glob could match, or that lies below a directory one could match:
    one parallel walk in C, ~20x a Python walk of the same tree); each candidate is then judged by the same
    ``PatternSet`` the file tools use, which names the file or the ancestor directory that is denied.
    """
    deny = compiled(workspace.deny_globs) if workspace.deny_globs else None
    frozen = compiled(workspace.read_only_globs) if workspace.read_only_globs else None
    seen: set[str] = set()
    for rel in _candidates(root, (*workspace.deny_globs, *workspace.read_only_globs)):
        for patterns, into in ((deny, None), (frozen, read_only)):
            hit = patterns.matches_path_or_parent(rel) if patterns is not None else None
            if hit is None:
                continue
            path = f"{root}/{hit}"
            if path not in seen and not os.path.islink(path):
                seen.add(path)
                is_dir = hit != rel
                target = into if into is not None else (hidden_dirs if is_dir else hidden_files)
                target.append(path)
                labels[path] = hit + ("/" if is_dir else "")
            break


def _candidates(root: Path, patterns: Sequence[str]) -> Iterator[str]:
    """Workspace-relative names of the files below ``root`` that ``patterns`` could match (a superset)."""
    globs: list[str] = []
    for pattern in patterns:
        body = pattern.strip().rstrip("/")
        if not body or body.startswith("!"):
            continue  # an exception only narrows what is matched: the candidates stay a superset
        if "/" in body:
            anchored = "/" + body.lstrip("/")
            globs += [anchored, anchored + "/**"]
        else:
            globs += [body, f"**/{body}/**"]
    from toolrig.sandbox.ripgrep import rg_binary

    try:
        argv = [rg_binary(), "--files", "--hidden", "--no-ignore", "--no-config", "--null", "--no-messages"]
    except ToolError:  # no ripgrep: walk in Python (slower, same answer)
        yield from (path[len(str(root)) + 1 :] for path, is_dir, _ in _entries(root) if not is_dir)
        return
    for glob in [*globs, f"!/{STATE_DIR_NAME}"]:
        argv += ["--glob", glob]
    done = subprocess.run(  # noqa: S603 - toolrig's own ripgrep, fixed flags, globs from trusted config
        [*argv, "--", "."], cwd=root, capture_output=True, stdin=subprocess.DEVNULL, timeout=_WALK_SECONDS, check=False
    )
    for name in done.stdout.split(b"\0"):
        if name:
            yield os.fsdecode(name).removeprefix("./")


def _entries(root: Path) -> Iterator[tuple[str, bool, _Pruner]]:
    """Every entry below ``root`` but symlinks and toolrig's state, top-down; the caller may prune a directory."""
    stack = [str(root)]
    seen = 0
    while stack and seen < _MAX_WALK:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode) or (entry.name == STATE_DIR_NAME and top == str(root)):
                continue
            is_dir = stat.S_ISDIR(mode)
            pruner = _Pruner()
            yield entry.path, is_dir, pruner
            if is_dir and not pruner.pruned:
                stack.append(entry.path)


class _Pruner:
    __slots__ = ("pruned",)

    def __init__(self) -> None:
        self.pruned = False

    def __call__(self) -> None:
        self.pruned = True
