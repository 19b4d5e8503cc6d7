from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.adapters.anthropic import tool_param
from toolrig.adapters.faces import FaceTool, faced, translate
from toolrig.adapters.openai import function_tool
from toolrig.profiles import NAMES, get_profile
from toolrig.registry import Registry
from toolrig.schema import to_strict

CATALOG = Registry.default(entry_points=False)
TOOLS = CATALOG.list()
ANTHROPIC_KEYS = {"name", "description", "input_schema"}


@pytest.mark.parametrize("name", NAMES)
def test_every_profile_renders_schemas_strict_openai_and_anthropic_accept(name: str) -> None:
    tools = faced(TOOLS, get_profile(name))
    assert len({t.name for t in tools}) == len(tools), "a profile must not show two tools under one name"
    for tool in tools:
        param = tool_param(tool)
        assert set(param) == ANTHROPIC_KEYS and param["input_schema"]["type"] == "object"
        function = function_tool(tool, strict=True)["function"]
        if function.get("strict"):
            assert to_strict(function["parameters"]).compatible
        converted = to_strict(tool.input_schema())
        if isinstance(tool, FaceTool) and not converted.compatible:
            # A face whose documented schema cannot be strict must be sent without strict, never broken.
            assert "strict" not in function


def test_a_profile_without_extras_offers_only_its_faces() -> None:
    from dataclasses import replace

    profile = replace(get_profile("claude"), extras=False)
    assert {t.name for t in faced(TOOLS, profile)} <= {f.name for f in profile.faces}


@pytest.mark.parametrize("name", NAMES)
@given(
    args=st.one_of(
        st.none(),
        st.text(max_size=30),
        st.dictionaries(
            st.text(max_size=8),
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(),
                st.floats(allow_nan=True),
                st.text(max_size=10),
                st.lists(
                    st.one_of(
                        st.text(max_size=5), st.integers(), st.dictionaries(st.text(max_size=5), st.text(max_size=5))
                    ),
                    max_size=3,
                ),
            ),
            max_size=6,
        ),
    )
)
def test_translating_any_arguments_never_raises(name: str, args: Any) -> None:
    profile = get_profile(name)
    for face in profile.faces:
        translated = translate(profile, face.name, args, CATALOG.find(face.tool))
        assert translated.name == face.tool


def test_flags_become_one_string_where_the_tool_takes_a_string(tmp_path: Path) -> None:
    from toolrig.adapters.faces import _fit

    schema = {"properties": {"flags": {"type": "string"}}}
    assert _fit({"flags": ["-g", "*.ts", "-i"]}, schema) == {"flags": "-g '*.ts' -i"}
    assert _fit({"flags": ["-i"]}, {"properties": {"flags": {"type": "array", "items": {"type": "string"}}}}) == {
        "flags": ["-i"]
    }
