"""A run's text and lines as Telegram HTML: escaped, cut within the limit, nothing lost or added."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.channels.telegram import render

OURS = {"b", "i", "code"}


class _Shown(HTMLParser):
    """Telegram's HTML as it would show it: the tags (ours only) and the text a person reads."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def shown(message: str) -> str:
    parser = _Shown()
    parser.feed(message)
    parser.close()
    assert set(parser.tags) <= OURS, parser.tags
    return "".join(parser.text)


@settings(max_examples=150, deadline=None)
@given(fragments=st.lists(st.text(max_size=3_000), max_size=12), limit=st.integers(min_value=40, max_value=4_000))
def test_any_text_streamed_in_any_fragments_is_shown_exactly_and_no_message_is_over_the_limit(
    fragments: list[str], limit: int
) -> None:
    transcript = render.Transcript(limit)
    for fragment in fragments:
        transcript.text(fragment)
    assert all(render.units(m) <= limit for m in transcript.messages)
    assert "".join(shown(m) for m in transcript.messages) == "".join(fragments)


@settings(max_examples=80, deadline=None)
@given(name=st.text(max_size=200), args=st.dictionaries(st.text(max_size=20), st.text(max_size=300), max_size=4))
def test_a_tool_line_shows_only_our_markup_whatever_the_model_named_or_passed(name: str, args: dict[str, str]) -> None:
    transcript = render.Transcript(400)
    transcript.text("before")
    transcript.line(render.tool_call({"type": "tool_call", "name": name, "args": args, "task_id": "t1"}))
    transcript.line(render.tool_result({"type": "tool_result", "name": name, "preview": str(args), "is_error": True}))
    assert all(render.units(m) <= 400 for m in transcript.messages)
    for message in transcript.messages:
        shown(message)


def test_fragments_between_two_flushes_are_one_edit() -> None:
    transcript = render.Transcript()
    for piece in ("Hel", "lo", " there"):
        transcript.text(piece)
    assert transcript.messages == ["Hello there"] and transcript.dirty == {0}
    transcript.dirty.clear()
    transcript.close()  # a card went out below it
    transcript.text("after the card")
    assert transcript.messages == ["Hello there", "after the card"] and transcript.dirty == {1}


def test_a_subagents_lines_and_calls_are_indented_under_it() -> None:
    transcript = render.Transcript()
    start = {"type": "subagent_start", "task_id": "t1", "agent_type": "<explorer>", "prompt": "look around"}
    transcript.line(render.subagent(start) or "")
    transcript.line(render.tool_call({"type": "tool_call", "name": "read", "args": {"path": "a"}, "task_id": "t1"}))
    transcript.line(render.subagent({"type": "subagent_done", "task_id": "t1", "status": "failed", "error": "x"}) or "")
    lines = shown(transcript.messages[0]).splitlines()
    assert lines == [
        "  ⇢ subagent <explorer> t1: look around",
        '    → read({"path": "a"})',
        "  ⇠ subagent t1 failed: x",
    ]
