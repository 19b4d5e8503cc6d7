"""Generated over the whole catalog: every tool's declared subjects reach the one gate, under every spelling.

No list of tools here: a new tool with a path, URL or command field is covered the moment it declares it.
Arguments are built from each input model (``Subject`` fields get the spelling under test, the rest the
simplest valid value), and the call goes through ``Executor.decide``, the gate a real call passes.
"""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import anyio
import pytest
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
