from __future__ import annotations

import json
import typing

import pytest

from toolrig import events
from toolrig.events import DoneEvent, ErrorEvent, Event, UsageEvent, event_from_json, event_to_json

SAMPLES: list[Event] = [
    events.InitEvent("s1"),
    events.ToolCallEvent("c1", "add", {"a": 1}),
    events.ToolCallDeltaEvent("c1", "add", '{"a"'),
    events.ToolResultEvent("c1", "add", '{"result":2}', False),
    events.ToolProgressEvent("c1", "add", 0.5, 1.0, "half"),
    events.ToolLogEvent("c1", "add", "warning", "rounded"),
    events.StreamTextEvent("hi"),
    events.ChunkEvent("hi there"),
    events.ThinkingEvent("start"),
    events.ThinkingDeltaEvent("hmm"),
    UsageEvent(10, 5, 100, 20, cost_usd=0.0012),
    events.ApprovalRequestEvent("r1", "wipe", {"target": "x"}, ["x"], "destructive"),
    events.ApprovalResolvedEvent("r1", "wipe", "deny", "no"),
    DoneEvent("s1", "answer", "completed"),
    ErrorEvent("timeout", "took too long"),
    events.SubagentStartEvent("helper-1a2b3c", "s1.1", "helper", "s1", "do it"),
    events.SubagentProgressEvent("s1.1", 3, 2100.0, "read_files"),
    events.SubagentDoneEvent("s1.1", "done", {"input": 10, "output": 5, "cost_usd": 0.0, "tool_calls": 3}),
    events.ToolResultEvent("c1", "add", "2", False, task_id="s1.1"),
    events.TodosEvent("s1", [{"task": "a", "status": "pending"}]),
    events.FollowupsEvent(None, ["Run the tests", "Open a PR"]),
]


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_every_event_survives_its_json_wire_form(event: Event) -> None:
    wire = json.loads(json.dumps(event_to_json(event)))
    assert wire["type"] == event.type
    assert event_from_json(wire) == event


def test_the_samples_cover_every_member_of_the_union() -> None:
    union = typing.get_args(typing.get_args(Event)[0])
    assert {type(e) for e in SAMPLES} == set(union)
