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


_OUTPUTS: dict[str, dict[str, Any]] = {}


def _real_output(tool: str, root: Path) -> dict[str, Any]:
    """One real output of each tool a face maps, from a harmless call, to feed the result mappers."""
    from toolrig.rig import Rig

    if not _OUTPUTS:
        (root / "a.txt").write_text("one\ntwo\n", encoding="utf-8")
        rig = Rig(root, config={})
        calls: dict[str, dict[str, Any]] = {
            "read_files": {"paths": ["a.txt"]},
            "write_file": {"path": "b.txt", "content": "x\n"},
            "edit": {"file_path": "b.txt", "old_string": "x", "new_string": "y"},
            "str_replace": {"path": "b.txt", "replacements": [{"old": "y", "new": "z"}]},
            "run_command": {"command": "echo hi"},
            "glob": {"pattern": "*.txt"},
            "code_search": {"pattern": "one"},
            "list_directory": {"directories": [{"path": "."}]},
            "write_todos": {"todos": [{"task": "t"}]},
            "suggest_followups": {"followups": ["a", "b"]},
            "memory_search": {"query": "x"},
            "apply_patch": {"patch": "*** Begin Patch\n*** Add File: c.txt\n+c\n*** End Patch\n"},
            "cron": {"action": "list"},
            "key_value_get": {"key": "k"},
        }
        for name, args in calls.items():
            result = rig.call_sync(name, args)
            assert not result.is_error, (name, result.to_json())
            _OUTPUTS[name] = result.output or {}
        _OUTPUTS["fetch_url"] = {"status_code": 200, "headers": {}, "body": "hi", "body_encoding": "text",
                                 "final_url": "https://e.x/", "truncated": False}  # fmt: skip
        _OUTPUTS["web_search"] = {"results": [{"title": "t", "url": "https://e.x/a", "snippet": "s"}]}
        _OUTPUTS["read_docs"] = {"passages": [{"url": "u", "heading": "h", "text": "t"}], "sites": [], "refreshed": []}
    return _OUTPUTS.get(tool, {})


@pytest.mark.parametrize("name", NAMES[1:])
@given(args=st.dictionaries(st.sampled_from(["file_path", "offset", "head_limit", "output_mode", "allowed_domains",
    "blocked_domains", "maxOutputStringLength", "path", "edits", "todos", "binary", "encoding", "content", "query"]),
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=4), max_size=2)),
    max_size=5))  # fmt: skip
def test_result_mappers_answer_any_face_arguments_with_a_dict_or_a_tool_error(
    name: str, args: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    from toolrig.errors import ToolError
    from toolrig.profiles import Shaped

    root = tmp_path_factory.getbasetemp() / "mappers"
    root.mkdir(exist_ok=True)
    for face in get_profile(name).faces:
        if face.result_out is None:
            continue
        try:
            shaped = face.result_out(Shaped(_real_output(face.tool, root), args, args))
        except ToolError:
            continue
        assert isinstance(shaped, dict)


def test_a_faces_tool_defaults_are_sent_only_where_the_tool_takes_them() -> None:
    from toolrig.definition import tool

    @tool(name="write_file")
    def with_conflict(path: str, content: str, on_conflict: str = "error") -> dict[str, str]:
        """A write_file that refuses to overwrite by default."""
        return {}

    claude = get_profile("claude")
    sent = translate(claude, "Write", {"file_path": "a", "content": "b"}, with_conflict)
    assert sent.args == {"path": "a", "content": "b", "on_conflict": "overwrite"}
    chosen = translate(claude, "Write", {"file_path": "a", "content": "b"}, CATALOG.find("write_file"))
    assert "on_conflict" not in chosen.args or "on_conflict" in CATALOG.get("write_file").input_schema()["properties"]


def _scalar_params() -> list[tuple[str, str, str]]:
    found = []
    for name in NAMES:
        for face in get_profile(name).faces:
            for param, spec in face.schema.get("properties", {}).items():
                if spec.get("type") in ("string", "number", "integer", "boolean"):
                    found.append((name, face.name, param))
    return found


@pytest.mark.parametrize(("profile", "face", "param"), _scalar_params())
def test_a_list_or_object_where_a_face_takes_one_value_is_refused_by_name_and_nothing_runs(
    tmp_path: Path, profile: str, face: str, param: str
) -> None:
    """Review F11: claude's Read with file_path as a list read the first file and dropped the rest."""
    from toolrig.rig import Rig

    with Rig(tmp_path, {"approvals": {"mode": "off"}}, profile=profile) as rig:
        for value in (["a.txt", "b.txt"], {"path": "a.txt"}):
            result = rig.call_sync(face, {param: value})
            assert result.is_error and result.error_type == "invalid_input", (face, param, result)
            assert f"'{param}'" in result.message and face in result.message
