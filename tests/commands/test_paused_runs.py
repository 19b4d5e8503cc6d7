"""Paused-run states on disk: hostile session ids and answers are refused with a reason, never a crash."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.agent.messages import Message
from toolrig.agent.state import PendingCall, RunState
from toolrig.commands import _paused_runs as paused_runs

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def state() -> RunState:
    question = {"question": "Which?", "options": [{"label": "a"}]}
    return RunState(
        session_id="s1",
        provider="openai",
        model="gpt-test",
        system_prompt=None,
        turns_used=1,
        max_turns=5,
        messages=[Message.user("hi")],
        new_from=0,
        pending=[
            PendingCall("q1", "ask_user", "{}", needs_approval=False, questions=[question]),
            PendingCall("c1", "calculate", "{}"),
        ],
        results={},
    )


@settings(max_examples=200, deadline=None)
@given(session_id=st.text(max_size=40))
def test_no_session_id_reads_a_file_outside_the_paused_folder(tmp_path_factory: Any, session_id: str) -> None:
    state_dir = tmp_path_factory.mktemp("state")
    secret = state_dir / "secret.json"
    secret.write_text(state().to_json())
    try:
        found = paused_runs.claim(state_dir / "inner", session_id)
    except paused_runs.ResumeRefused:
        return
    pytest.fail(f"{session_id!r} read {found.session_id}")  # nothing lies under inner/paused/


@settings(max_examples=300, deadline=None)
@given(answers=JSON, decisions=JSON)
def test_any_answers_are_taken_or_refused_with_a_reason(answers: Any, decisions: Any) -> None:
    try:
        replies = paused_runs.replies_for(state(), answers, decisions)
    except paused_runs.ResumeRefused as exc:
        assert str(exc)
        return
    assert set(replies.answers) <= {"q1"} and set(replies.decisions) <= {"c1"}


def test_a_pause_is_taken_once(tmp_path: Path) -> None:
    paused_runs.save(tmp_path, state())
    assert paused_runs.claim(tmp_path, "s1").session_id == "s1"
    paused_runs.take(tmp_path, "s1")
    with pytest.raises(paused_runs.ResumeRefused, match="already resumed"):
        paused_runs.take(tmp_path, "s1")
    with pytest.raises(paused_runs.ResumeRefused, match="already resumed"):
        paused_runs.claim(tmp_path, "s1")


@settings(max_examples=150, deadline=None)
@given(inner=st.text(max_size=40))
def test_the_session_id_inside_a_state_file_never_names_another_file(tmp_path_factory: Any, inner: str) -> None:
    """A shipped `.toolrig/paused/fix.json` naming session "../../../victim" is refused, not obeyed."""
    state_dir = tmp_path_factory.mktemp("state")
    victim = state_dir.parent / "victim.json"
    victim.write_text("{}")
    forged = state()
    forged.session_id = inner
    (state_dir / "paused").mkdir()
    (state_dir / "paused" / "fix.json").write_text(forged.to_json())
    try:
        found = paused_runs.claim(state_dir, "fix")
    except paused_runs.ResumeRefused as exc:
        assert "fix.json" in str(exc) or "session id" in str(exc)
    else:
        assert found.session_id == "fix"  # only a state that names itself is taken
    with contextlib.suppress(paused_runs.ResumeRefused):
        paused_runs.save(state_dir, forged)
    assert victim.read_text() == "{}"
    assert sorted(p.name for p in state_dir.parent.glob("victim*")) == ["victim.json"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("link", [".toolrig", ".toolrig/paused", ".toolrig/paused/s1.json"])
def test_a_committed_symlink_in_the_paused_folder_is_refused_by_every_operation(tmp_path: Path, link: str) -> None:
    """A repository may ship `.toolrig/paused -> ~/somewhere`: no state is written, read or renamed through it."""
    workspace, outside = tmp_path / "repo", tmp_path / "outside"
    workspace.mkdir()
    (outside / "paused").mkdir(parents=True)
    (outside / "paused" / "s1.json").write_text(state().to_json())  # a real state, the link's target
    (outside / "s1.json").write_text(state().to_json())
    target = {
        ".toolrig": outside,
        ".toolrig/paused": outside / "paused",
        ".toolrig/paused/s1.json": outside / "s1.json",
    }
    (workspace / link).parent.mkdir(parents=True, exist_ok=True)
    (workspace / link).symlink_to(target[link])
    before = _tree(outside)
    state_dir = workspace / ".toolrig"
    with pytest.raises(paused_runs.ResumeRefused, match="symlink"):
        paused_runs.claim(state_dir, "s1")
    with pytest.raises(paused_runs.ResumeRefused, match="symlink"):
        paused_runs.take(state_dir, "s1")
    with pytest.raises(paused_runs.ResumeRefused, match="symlink"):
        paused_runs.save(state_dir, state())  # replacing the link would be safe; writing through it is not
    paused_runs.is_paused(state_dir, "s1")  # answers without following the link
    assert _tree(outside) == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet="\x1b[2J\r\x07\u009ba \n", max_size=20))
def test_a_paused_run_prints_the_model_s_questions_and_calls_with_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """The questions and the call are the model's words; the resume command printed after them is copied."""
    from types import SimpleNamespace

    from toolrig.commands._run_impl import _paused

    question = {"question": f"Which{text}?", "options": [{"label": f"a{text}"}]}
    forged = state()
    forged.pending = [
        PendingCall(f"q{text}", "ask_user", "{}", needs_approval=False, questions=[question]),
        PendingCall("c1", "run_command", "{}", reason=f"why{text}"),
    ]
    rig = SimpleNamespace(workspace=SimpleNamespace(state_dir=tmp_path / f"s{len(list(tmp_path.iterdir()))}"))
    with pytest.raises(SystemExit):
        _paused(rig, SimpleNamespace(state=forged))
    err = capsys.readouterr().err
    assert not any(c in err for c in "\x1b\r\x07\u009b")
    assert "toolrig run --resume s1" in err
