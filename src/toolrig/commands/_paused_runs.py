"""Paused ``toolrig run`` states on disk: kept by session id, claimed once, and the answers that resume them.

Trust model: the session id and the answers come from whoever types the command (or a script fed by a
remote person), so the id never becomes a path outside ``.toolrig/paused/`` and the answers must name
exactly the calls the saved state waits for. A state is claimed by an atomic rename: two resumes of the
same pause cannot both run it (its tool calls would run twice). ``paused/`` is inside the state dir, which a
repository can fill: every file here is reached through ``StatePath`` (no symlink followed, D2's class).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from toolrig.agent.errors import RunError
from toolrig.agent.state import RunState
from toolrig.approvals.model import Verdict
from toolrig.errors import ToolError
from toolrig.sandbox.statedir import StatePath

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_USED = ".json.used"


class ResumeRefused(Exception):
    """Why a paused run cannot be resumed as asked; the message is for the person, exit code 2."""


def _valid(session_id: str) -> bool:
    return _SESSION_ID.fullmatch(session_id) is not None and ".." not in session_id


def paused_path(state_dir: Path, session_id: str) -> Path:
    """Where a session's paused state lives; an id that could leave ``paused/`` is refused, whoever wrote it."""
    if not _valid(session_id):
        raise ResumeRefused(f"no paused run {session_id!r} (a session id is letters, digits, '-', '_' and '.')")
    return state_dir / "paused" / f"{session_id}.json"


def _folder(state_dir: Path) -> StatePath:
    return StatePath.of(state_dir).child("paused")


def _refused(exc: ToolError) -> ResumeRefused:
    return ResumeRefused(f"{exc.message} {exc.next_action_hint or ''}".strip())


def save(state_dir: Path, state: RunState) -> Path:
    """Keep the state, atomically; a symlink on the way is refused (``ResumeRefused``), never followed."""
    path = paused_path(state_dir, state.session_id)
    try:
        _folder(state_dir).write_bytes(path.name, data=state.to_json().encode("utf-8", errors="surrogatepass"))
    except ToolError as exc:
        raise _refused(exc) from None
    return path


def is_paused(state_dir: Path, session_id: str) -> bool:
    if not _valid(session_id):
        return False
    try:
        info = _folder(state_dir).lstat(paused_path(state_dir, session_id).name)
    except ToolError:
        return True  # a link where a state would be: resuming refuses it with its own message
    return info is not None


def claim(state_dir: Path, session_id: str) -> RunState:
    """Take the paused state for resuming; afterwards nobody else can (single use).

    The file's own ``session_id`` must be the one it is kept under: the state is input (a file anyone could
    have put there), and its id names the files the run writes next.
    """
    path = paused_path(state_dir, session_id)
    folder = _folder(state_dir)
    used = path.stem + _USED
    try:
        state = RunState.from_json(folder.read_bytes(path.name))
    except (FileNotFoundError, NotADirectoryError):
        try:
            resumed = folder.lstat(used) is not None
        except ToolError:
            resumed = False
        if resumed:
            raise ResumeRefused(f"the paused run {session_id!r} was already resumed; a pause resumes once") from None
        raise ResumeRefused(f"no paused run {session_id!r} in {path.parent}") from None
    except ToolError as exc:
        raise _refused(exc) from None
    except RunError as exc:
        raise ResumeRefused(f"{path}: {exc.message}") from None
    if state.session_id != session_id:
        raise ResumeRefused(f"{path}: the state inside names session {state.session_id!r}, not {session_id!r}")
    return state


def take(state_dir: Path, session_id: str) -> None:
    """Mark the state used, atomically: of two resumes racing, exactly one gets here without an error."""
    path = paused_path(state_dir, session_id)
    try:
        if _folder(state_dir).lstat(path.name) is None:  # a link is refused here; a rename never follows one
            raise FileNotFoundError(path)
        with _folder(state_dir).directory(create=False) as fd:
            os.rename(path.name, path.stem + _USED, src_dir_fd=fd, dst_dir_fd=fd)
    except (FileNotFoundError, NotADirectoryError):
        raise ResumeRefused(f"the paused run {session_id!r} was already resumed; a pause resumes once") from None
    except ToolError as exc:
        raise _refused(exc) from None


def read_json_option(value: str | None, name: str) -> Any:
    """An option's JSON: inline, ``@PATH`` for a file, ``-`` for stdin."""
    if value is None:
        return None
    try:
        if value == "-":
            text = sys.stdin.read()
        elif value.startswith("@"):
            text = Path(value[1:]).read_text(encoding="utf-8")
        else:
            text = value
    except (OSError, UnicodeDecodeError) as exc:
        raise ResumeRefused(f"{name}: cannot read {value[1:]}: {exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ResumeRefused(f"{name} is not JSON: {exc}") from None


@dataclass
class Replies:
    answers: dict[str, Any]
    decisions: dict[str, Verdict]


def replies_for(state: RunState, answers: Any, decisions: Any) -> Replies:
    """Check the person's answers against what the state waits for; anything that does not fit is refused.

    ``answers``: ``{call_id: [one answer per question] | null}`` (null skips); ``decisions``:
    ``{call_id: "allow_once" | "allow_always" | "deny"}``. A call left out is skipped (questions) or
    denied (approvals), as ``resume_run`` does.
    """
    questions = {p.call_id: p.questions for p in state.pending if p.questions}
    approvals = {p.call_id for p in state.pending if p.needs_approval}
    answers = {} if answers is None else answers
    decisions = {} if decisions is None else decisions
    if not isinstance(answers, Mapping):
        raise ResumeRefused('--answers must be a JSON object: {"CALL_ID": [{"selected": ["label"]}, ...]}')
    if not isinstance(decisions, Mapping):
        raise ResumeRefused('--decisions must be a JSON object: {"CALL_ID": "allow_once" | "allow_always" | "deny"}')
    for call_id, given in answers.items():
        if call_id not in questions:
            raise ResumeRefused(
                f"--answers names {call_id!r}, which is not a question this run waits for{_known(questions)}"
            )
        asked = questions[call_id]
        if given is None:
            continue
        if not isinstance(given, list) or len(given) != len(asked):
            raise ResumeRefused(f"--answers[{call_id!r}] must be a list of {len(asked)} answer(s), one per question")
        for index, item in enumerate(given, start=1):
            if not isinstance(item, str | Mapping):
                raise ResumeRefused(
                    f"--answers[{call_id!r}] answer {index} must be an object "
                    '({"selected": [...], "other_text": ...}) or a string'
                )
    verdicts = get_args(Verdict)
    for call_id, verdict in decisions.items():
        if call_id not in approvals:
            raise ResumeRefused(
                f"--decisions names {call_id!r}, which is not an approval this run waits for{_known(approvals)}"
            )
        if verdict not in verdicts:
            raise ResumeRefused(f"--decisions[{call_id!r}] must be one of {', '.join(verdicts)}, not {verdict!r}")
    return Replies(answers=dict(answers), decisions=dict(decisions))


def _known(ids: Mapping[str, Any] | set[str]) -> str:
    return f" (it waits for: {', '.join(sorted(ids))})" if ids else " (it waits for none)"


def resume_hint(state: RunState) -> str:
    """The exact command that goes on, with a template the person fills in."""
    answers = {p.call_id: [{"selected": ["..."]} for _ in p.questions] for p in state.pending if p.questions}
    decisions = {p.call_id: "allow_once" for p in state.pending if p.needs_approval}
    parts = ["toolrig run --resume " + shlex.quote(state.session_id)]
    # ASCII JSON: a call id is the model's (or a state file's) text, and a C1 control such as U+009B would
    # reach the terminal raw in the very line the person copies; a \u escape reads back as the same id.
    if answers:
        parts.append("--answers " + shlex.quote(json.dumps(answers)))
    if decisions:
        parts.append("--decisions " + shlex.quote(json.dumps(decisions)))
    return " ".join(parts)
