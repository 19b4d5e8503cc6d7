"""Every tool's input model, fuzzed from its JSON Schema with hostile strings mixed in: no result is ``internal``.

Review D15 ("errors that are not answers"): lone surrogates, NUL, deep nesting, huge brace expansions and odd
Unicode must come back as a clear error (or an answer), never as an unexpected failure. Deterministic
(``derandomize``, no example database) and bounded: a modest number of examples per tool.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from tests.support.examples import examples
from tests.support.file_helpers import write
from toolrig import Rig
from toolrig.registry import Registry


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_TEXT = [
    "\ud800",
    "a\udfffb",
    "\x00",
    "a\x00b",
    "{a,b}" * 9,
    "{a,b,c,d}" * 6 + ".py",
    "{1..1000000}",
    "**/" * 40 + "*",
    "[[[[[[",
    "(?<",
    "\u202eevil\u202c",
    "\ufeff\u200b",
    "\x1b[31mred",
    "line\u2028line\u0085line",
    "A\u0301\u0301\u0301",
    "\U0001f600" * 50,
    "../" * 20 + "etc/passwd",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    ".toolrig/audit.db",
    ".git/config",
    "~",
    "$(id)`id`",
    "'\"\\",
    "%s%n%x",
    "x" * 5000,
    "",
    " ",
    "-",
    "--",
    "-rf",
]

HOSTILE_VALUES: list[Any] = [_deep(400), {"a": _deep(50)}, [None] * 200, 10**400, -1, 1e308, float("inf")]

text = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=20), st.text(st.characters(codec=None), max_size=8))


def _mutate(data: st.DataObject, value: Any) -> Any:
    """Swap some leaves of a schema-valid value for hostile ones, keeping the rest valid."""
    if isinstance(value, str):
        return data.draw(text) if data.draw(st.booleans()) else value
    if isinstance(value, dict):
        if value and data.draw(st.integers(0, 9)) == 0:
            return data.draw(st.sampled_from(HOSTILE_VALUES))
        return {key: _mutate(data, item) for key, item in value.items()}
    if isinstance(value, list):
        if data.draw(st.integers(0, 9)) == 0:
            return data.draw(st.sampled_from(HOSTILE_VALUES))
        return [_mutate(data, item) for item in value]
    return value


CONFIG: dict[str, Any] = {
    "limits": {"timeout_seconds": 10},
    "tool_config": {
        "run_command": {"allow": ["true"]},  # parses every fuzzed command; runs none but `true`
        "fetch_url": {"allowed_domains": ["none.invalid"]},
        "webhook": {"allowed_domains": ["none.invalid"]},
    },
}
NAMES = Registry.default(entry_points=False).names()


@pytest.fixture
def fuzz_rig(workspace: Path) -> Iterator[Rig]:
    write(workspace, {"a.txt": "alpha\n", "src/m.py": "print(1)\n", "memory/n.md": "# note\ntext\n", ".env": "K=v\n"})
    with Rig(workspace, config=CONFIG) as rig:
        yield rig


def _schema(rig: Rig, name: str) -> dict[str, Any]:
    tool = rig.registry.get(name)
    assert tool is not None
    schema: dict[str, Any] = tool.input_model.model_json_schema()
    return schema


@pytest.mark.parametrize("name", NAMES)
def test_no_tool_answers_a_hostile_input_with_internal(fuzz_rig: Rig, name: str) -> None:
    strategy = from_schema(_schema(fuzz_rig, name))

    @settings(
        max_examples=examples(25),  # a tenth, at least 10, in the fast loop
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        arguments = _mutate(data, data.draw(strategy))
        result = fuzz_rig.call_sync(name, arguments)
        assert result.error_type != "internal", (name, repr(arguments)[:300], result.message)
        json.dumps(result.model_dump(mode="json"))  # every answer serialises

    check()
