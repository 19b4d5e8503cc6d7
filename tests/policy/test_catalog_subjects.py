"""Generated over the whole catalog: every tool's declared subjects reach the one gate, under every spelling.

No list of tools here: a new tool with a path, URL or command field is covered the moment it declares it.
Arguments are built from each input model (``Subject`` fields get the spelling under test, the rest the
simplest valid value), and the call goes through ``Executor.decide``, the gate a real call passes.
"""

from __future__ import annotations

import json
import os
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from toolrig import Rig
from toolrig.definition import Subject
from toolrig.registry import AnyTool, Registry

CATALOG = Registry.default().list()


def _tools(kind: str) -> list[AnyTool]:
    return [t for t in CATALOG if t.subject_kind == kind]


def _sample(annotation: Any, subject: str | None) -> Any:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _sample(get_args(annotation)[0], subject)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return _sample(members[0], subject)
    if origin is Literal:
        return get_args(annotation)[0]
    if origin in (list, tuple, set):
        (item, *_) = get_args(annotation) or (str,)
        return [_sample(item, subject)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return build(annotation, subject)
    if annotation is bool:
        return False
    if annotation in (int, float):
        return 1
    if origin is dict or annotation is dict:
        return {}
    return subject if subject is not None else "x"


def build(model: type[BaseModel], subject: str) -> dict[str, Any]:
    """Arguments for ``model``: every ``Subject`` field set to ``subject``, every other required field filled."""
    args: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        marked = any(isinstance(m, Subject) for m in info.metadata)
        nested = _has_subjects(info.annotation)
        if marked or nested or info.is_required():
            args[info.alias or name] = _sample(info.annotation, subject if (marked or nested) else None)
    return args


def _has_subjects(annotation: Any) -> bool:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return any(any(isinstance(m, Subject) for m in f.metadata) for f in candidate.model_fields.values())
    return False


def arguments(tool: AnyTool, subject: str) -> dict[str, Any]:
    if tool.name == "apply_patch":  # computed subjects: the paths inside the patch text
        return {"patch": f"*** Begin Patch\n*** Add File: {subject}\n+x\n*** End Patch\n"}
    return build(tool.input_model, subject)


def decide(rig: Rig, tool: AnyTool, args: dict[str, Any]) -> tuple[str, str, str]:
    call, refused = anyio.run(lambda: rig.executor.decide(tool.name, args))
    assert call.input is not None, f"{tool.name}: the generated arguments did not validate: {refused}"
    return call.verdict, call.decided_by, refused.error_type if refused else ""


def test_the_catalog_declares_subjects_for_every_tool_that_acts_on_paths_urls_and_commands() -> None:
    assert {"read_files", "write_file", "edit", "apply_patch", "list_directory", "glob", "code_search"} <= {
        t.name for t in _tools("path")
    }
    assert {"fetch_url", "webhook"} <= {t.name for t in _tools("url")}
    assert {"run_command"} <= {t.name for t in _tools("command")}


PATH_SPELLINGS = ["secrets/x", "./secrets/x", "a/../secrets/x", "link/x", "secrets", "{root}/secrets/x"]


@pytest.mark.parametrize("tool", _tools("path"), ids=lambda t: t.name)
def test_every_path_tool_is_refused_by_a_secrets_deny_under_every_spelling(tool: AnyTool, workspace: Path) -> None:
    (workspace / "secrets").mkdir()
    (workspace / "a").mkdir()
    os.symlink("secrets", workspace / "link")
    rig = Rig(workspace, config={"tools": {"rules": [{"tool": "*", "subject": "secrets/**", "verdict": "deny"}]}})
    for spelling in PATH_SPELLINGS:
        subject = spelling.format(root=workspace)
        verdict, rule, error = decide(rig, tool, arguments(tool, subject))
        assert (verdict, rule, error) == ("deny", "tools.rules[0]", "denied"), (tool.name, subject)
    allowed = decide(rig, tool, arguments(tool, "public/x"))
    assert allowed[0] == "allow", tool.name


def test_a_patch_that_moves_a_file_into_a_denied_path_is_refused(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("x\n")
    rig = Rig(workspace, config={"tools": {"rules": [{"tool": "*", "subject": "secrets/**", "verdict": "deny"}]}})
    patch = "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: secrets/notes.txt\n@@\n-x\n+y\n*** End Patch\n"
    call, refused = anyio.run(lambda: rig.executor.decide("apply_patch", {"patch": patch}))
    assert refused is not None and call.decided_by == "tools.rules[0]"


URL_SPELLINGS = [
    "https://evil.example/x",
    "https://EVIL.example/x",
    "https://evil.example:443/x",
    "https://user@evil.example/x",
    "HTTPS://evil.example/x?q=1",
]


@pytest.mark.parametrize("tool", _tools("url"), ids=lambda t: t.name)
def test_every_url_tool_is_refused_by_a_domain_deny(tool: AnyTool, workspace: Path) -> None:
    rig = Rig(
        workspace, config={"tools": {"rules": [{"tool": "*", "subject": "*://evil.example/*", "verdict": "deny"}]}}
    )
    for url in URL_SPELLINGS:
        verdict, rule, _ = decide(rig, tool, arguments(tool, url))
        assert (verdict, rule) == ("deny", "tools.rules[0]"), (tool.name, url)


COMMAND_SPELLINGS = ["rm -rf x", "/bin/rm -rf x", "echo hi; rm x", "FOO=1 rm x", "true && rm x", "echo $(rm x)"]


@pytest.mark.parametrize("tool", _tools("command"), ids=lambda t: t.name)
def test_every_shell_tool_is_refused_by_a_command_deny(tool: AnyTool, workspace: Path) -> None:
    rig = Rig(workspace, config={"tools": {"rules": [{"tool": "*", "subject": "rm *", "verdict": "deny"}]}})
    for command in COMMAND_SPELLINGS:
        verdict, rule, _ = decide(rig, tool, arguments(tool, command))
        assert (verdict, rule) == ("deny", "tools.rules[0]"), (tool.name, command)


# Fields that name a file or a folder, whatever subject kind the tool gives them. A tool with one of these
# either reads its subjects from it (and then every spelling below must reach policy as the file it opens), or
# says here why the field is governed elsewhere.
PATH_FIELDS = ("path", "paths", "file_path", "cwd", "collection")
GOVERNED_ELSEWHERE = {
    "run_command": "cwd goes through the workspace (deny_globs, tool '*' path denies); its rules read the command",
    "librarian_query": "collection narrows what the query (the subject) reads; the store refuses odd names",
    "librarian_search": "collection narrows what the query (the subject) reads; the store refuses odd names",
}
CANONICAL = {"collection": "memory/private"}  # what each field names: one file, as every tool spells it
FILE = "memory/private/x.md"
MARKER = "MARKER-PRIVATE-7f3a"


def _path_fields(tool: AnyTool) -> list[str]:
    """The path-like fields whose value reaches the tool's subjects (a token put there shows up in them)."""
    found = []
    for name in PATH_FIELDS:
        info = tool.input_model.model_fields.get(name)
        if info is None:
            continue
        args = {**build(tool.input_model, "other"), (info.alias or name): _sample(info.annotation, "zz-token")}
        subjects = tool.subjects(tool.input_model.model_validate(args))
        if any("zz-token" in s for s in subjects):
            found.append(name)
    return found


def _nested_path_tools() -> list[AnyTool]:
    return [t for t in CATALOG if t.has_subjects and (_path_fields(t) or t.subject_kind == "path")]


def test_every_tool_with_a_path_field_reads_its_subjects_from_it_or_says_why_not() -> None:
    ungoverned = {
        t.name for t in CATALOG if any(n in t.input_model.model_fields for n in PATH_FIELDS) and not _path_fields(t)
    }
    assert ungoverned == set(GOVERNED_ELSEWHERE), "a path field that policy never reads"


def _spelled(canonical: str) -> st.SearchStrategy[str]:
    """Spellings of one path that name the same file: './', '//', a trailing '/.', 'a/../', padding, '/db/'."""
    parts = canonical.split("/")

    @st.composite
    def spell(draw: st.DrawFn) -> str:
        out: list[str] = []
        for part in parts:
            out.extend(draw(st.lists(st.sampled_from([".", "", "zz/.."]), max_size=2)))
            out.append(part)
        text = "/".join(out)
        text += draw(st.sampled_from(["", "/.", "/", "/./"]))
        text = draw(st.sampled_from(["", "./", "/db/", "db/"])) + text
        return draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " ", "\n"]))

    return spell()


def _plant(workspace: Path, rig: Rig) -> None:
    """The one file, wherever a tool of the catalog would find it under the name FILE."""
    for folder in (workspace, workspace / ".agents/skills/x"):
        (folder / FILE).parent.mkdir(parents=True, exist_ok=True)
        (folder / FILE).write_text(MARKER + "\n")
    (workspace / ".agents/skills/x/SKILL.md").write_text("---\nname: x\ndescription: A test skill.\n---\nBody.\n")
    document = {"collection": "memory/private", "document_name": "x.md", "content": f"<m>{MARKER}</m>"}
    stored = rig.call_sync("librarian_store", document)
    assert not stored.is_error, stored.output


def _args(tool: AnyTool, fields: list[str], spelling: str) -> dict[str, Any]:
    args = build(tool.input_model, spelling)
    for name in fields:
        info = tool.input_model.model_fields[name]
        args[info.alias or name] = _sample(info.annotation, spelling)
    if "document_name" in args:
        args["document_name"] = "x.md"
    return args


@pytest.mark.parametrize("tool", [t for t in _nested_path_tools() if t.name != "apply_patch"], ids=lambda t: t.name)
def test_every_spelling_of_a_path_reaches_policy_as_the_file_the_tool_opens(
    tool: AnyTool, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N2 (hostile review 2026-11-28): memory_get read 'memory/./private/x.md' past a rule on 'memory/private/*'.

    For each spelling: policy's unit is the canonical file's, or the tool, run for real, neither reads nor
    changes that file (it refuses the spelling, or opens another path, which the unit then names).
    """
    from toolrig.config import set_trust

    monkeypatch.setenv("HOME", str(workspace.parent / "home"))
    set_trust(workspace)
    fields = _path_fields(tool)
    canonical = CANONICAL.get(fields[0], FILE) if fields else FILE
    with Rig(workspace, {"approvals": {"mode": "off"}}) as rig:
        _plant(workspace, rig)
        if tool.name == "read_skill_resource":
            rig.call_sync("load_skill", {"name": "x"})
        expected = _units(rig, tool, _args(tool, fields, canonical))

        @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(spelling=_spelled(canonical))
        def check(spelling: str) -> None:
            args = _args(tool, fields, spelling)
            if _units(rig, tool, args) == expected:
                return
            result = rig.call_sync(tool.name, args)
            assert (workspace / FILE).read_text() == MARKER + "\n", (tool.name, spelling)
            assert result.is_error or MARKER not in json.dumps(result.output), (tool.name, spelling, result.output)

        check()


def _units(rig: Rig, tool: AnyTool, args: dict[str, Any]) -> tuple[str, ...]:
    from toolrig.policy.subjects import kind_of, view

    call, _ = anyio.run(lambda: rig.executor.decide(tool.name, args))
    assert call.input is not None, (tool.name, args)
    return view(kind_of(tool), call.subjects, rig.workspace).units


def test_a_memory_resource_uri_is_judged_as_the_file_it_reads(workspace: Path) -> None:
    from toolrig.adapters.mcp_resources import route

    rule = {"tool": "memory_get", "subject": "memory/private/*", "verdict": "deny"}
    with Rig(workspace, {"tools": {"rules": [rule]}}) as rig:
        (workspace / FILE).parent.mkdir(parents=True)
        (workspace / FILE).write_text(MARKER)
        for uri in (
            "memory://memory/./private/x.md",
            "memory://memory//private/x.md",
            "memory://memory/private/./x.md",
        ):
            read = route(uri)
            assert read is not None
            result = rig.call_sync(read.tool, read.args)
            assert result.is_error and result.error_type == "denied" and MARKER not in str(result.output), uri
