"""Text no UTF-8 can carry in a tool's output (a file name that is not UTF-8, as ``os.fsdecode`` gives it).

One such name in a hostile repository made glob, list_directory and code_search's file lists fail as
``internal`` for the whole workspace: the output could not be serialized. The class: any lone surrogate in
any tool's output, fixed once where every output is serialized (the executor's stage 3).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig import Rig, tool
from toolrig.shaping import escape_surrogates

# Anything a file name's bytes may decode to, and lone surrogates no byte made (legal in JSON text).
names = st.binary(min_size=1, max_size=30).map(os.fsdecode)
odd_text = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=30)


_RETURNED: list[str] = []  # what the tool below returns: text a listing could hold, which no argument can


@tool
def echo_listing() -> dict[str, object]:
    """Return names as a listing would have them, and one key made of bytes that are not UTF-8."""
    return {"texts": list(_RETURNED), os.fsdecode(b"key-\xfe"): True}


@settings(max_examples=60, deadline=None)
@given(st.lists(names | odd_text, max_size=5))
def test_any_text_in_an_output_reaches_the_model_as_valid_json_never_internal(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str]
) -> None:
    _RETURNED[:] = texts
    result = Rig(tmp_path_factory.mktemp("ws"), tools=[echo_listing]).call_sync("echo_listing", {})
    assert not result.is_error, result
    json.loads(result.to_json())  # what every front end sends
    output = dict((result.output or {})["result"])
    assert [key for key in output if key.startswith("key-")]  # a key is never an error either (pydantic mends it)
    for text, shown in zip(texts, output["texts"], strict=True):  # type: ignore[call-overload]
        try:
            original = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            assert shown == text.encode("utf-8", "backslashreplace").decode()  # no byte made it: its code point
            continue
        assert shown == original.decode("utf-8", "backslashreplace")  # a name's bytes, as `ls -b` shows them


def test_a_text_without_surrogates_is_left_exactly_as_it_was() -> None:
    value = {"a": ["plain", "é", "\\xff literally", {"k": 1.5, "n": None}], "b": (1, "x")}
    assert escape_surrogates(value) == {"a": ["plain", "é", "\\xff literally", {"k": 1.5, "n": None}], "b": [1, "x"]}


@pytest.fixture
def hostile_repo(workspace: Path) -> Path:
    (workspace / "good.py").write_text("needle = 2\n")
    with open(os.path.join(os.fsencode(workspace), b"bad-\xff.py"), "w") as handle:
        handle.write("needle = 1\n")
    return workspace


@pytest.mark.parametrize(
    ("name", "args", "listed"),
    [
        ("glob", {"pattern": "**/*.py"}, lambda out: out["files"]),
        ("list_directory", {"directories": [{"path": "."}]}, lambda out: [e["name"] for e in out["listings"]["."]]),
        ("code_search", {"pattern": "needle", "output_mode": "files_with_matches"}, lambda out: out["output"].split()),
    ],
)
def test_one_file_name_that_is_not_utf8_no_longer_blinds_the_listing_tools(
    hostile_repo: Path, name: str, args: dict[str, object], listed: object
) -> None:
    rig = Rig(hostile_repo)
    for _ in range(2):  # the second glob comes from the mtime cache
        result = rig.call_sync(name, args)
        assert not result.is_error, result
        assert sorted(listed(result.output)) == ["bad-\\xff.py", "good.py"]  # type: ignore[operator]
        assert any("not valid UTF-8" in note for note in result.notes)
        json.loads(result.to_json())
