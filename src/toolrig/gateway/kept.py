"""What a paused state does not say about its run, kept beside it: the agent that paused it, its user, its prompt.

Why: a run resumes as the agent that started it (its type and narrowed permissions), never as the server's default,
and stays its user's after a restart. Kept under ``.toolrig/gateway/paused/<session>.json`` through ``StatePath``
(no symlink followed: the state dir is in a repository anyone could fill). The file is input: a value of the wrong
shape reads as no record, and a restored run whose agent is no longer configured is not resumed at all.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from toolrig.commands._paused_runs import ResumeRefused, paused_path
from toolrig.errors import ToolError
from toolrig.sandbox.statedir import StatePath


@dataclass(frozen=True)
class Kept:
    agent: str | None
    user: str | None
    prompt: str


def _folder(state_dir: Path) -> StatePath:
    return StatePath.of(state_dir).child("gateway", "paused")


def _name(state_dir: Path, session_id: str) -> str:
    return paused_path(state_dir, session_id).name  # the same id check as the paused state's own file


def save(state_dir: Path, session_id: str, kept: Kept) -> None:
    data = {"agent": kept.agent, "user": kept.user, "prompt": kept.prompt[:2000]}
    _folder(state_dir).write_bytes(_name(state_dir, session_id), data=json.dumps(data).encode())


def load(state_dir: Path, session_id: str) -> Kept | None:
    """The record, or None when there is none (a run ``toolrig run`` paused) or it is not one of ours."""
    try:
        data = json.loads(_folder(state_dir).read_bytes(_name(state_dir, session_id)))
    except (OSError, ValueError, ToolError, ResumeRefused):
        return None
    if not isinstance(data, dict):
        return None
    agent, user, prompt = data.get("agent"), data.get("user"), data.get("prompt")
    if not all(v is None or isinstance(v, str) for v in (agent, user)) or not isinstance(prompt, str):
        return None
    return Kept(agent, user, prompt)


def drop(state_dir: Path, session_id: str) -> None:
    with contextlib.suppress(OSError, ToolError, ResumeRefused), _folder(state_dir).directory(create=False) as fd:
        os.unlink(_name(state_dir, session_id), dir_fd=fd)
