"""Issue 38: the seeds' own example calls and configs, used verbatim, under every profile."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.media_tools import make_notebook, make_pdf, tiny_png
from tests.support.servers import HttpServer
from tests.support.skill_helpers import install_samples, isolate_home
from toolrig.agent.subagents.loading import load_agent_types
from toolrig.approvals import ApprovalDecision, ApprovalRequest, CallbackChannel
from toolrig.approvals.model import Reply
from toolrig.config import config_from, set_trust
from toolrig.profiles import (
    NAMES,
    SPAWNING,
    Face,
    Shaped,
    all_faces,
    by_tool_name,
    capability_of,
    get_profile,
    tools_named,
)
from toolrig.result import ToolResult
from toolrig.rig import Rig

# Names other systems use for a capability that several toolrig tools make up.
CAPABILITIES = ("Agent", "Task", "Edit", "LS")


def offered(rig: Rig) -> set[str]:
    return {schema["name"] for schema in rig.schemas("json", profile=rig.profile)}


@pytest.mark.parametrize("profile", NAMES)
def test_seed_002s_deny_agent_removes_every_spawning_tool_in_every_profile(workspace: Path, profile: str) -> None:
    rig = Rig(workspace, config={"tools": {"deny": ["Agent"]}}, profile=profile)
    assert offered(rig) & {*SPAWNING, "Agent", "Task"} == set()
    for name in SPAWNING:
        result = rig.call_sync(name, {"description": "x", "prompt": "x"})
        assert result.is_error, name


@pytest.mark.parametrize("profile", NAMES)
@pytest.mark.parametrize("capability", CAPABILITIES)
def test_a_capability_name_denies_each_tool_it_stands_for(workspace: Path, profile: str, capability: str) -> None:
    tools = set(tools_named(capability))
    assert len(tools) >= 1
    rig = Rig(workspace, config={"tools": {"deny": [capability]}}, profile=profile)
    names = {t.name for t in rig.tools()}
    assert names & tools == set()
    kept = Rig(workspace, config={"tools": {"allow": [capability]}})
    # listed once per capability (Agent and Task are spawn_agents), each still callable by its own name
    assert {capability_of(t.name) for t in kept.tools()} >= {capability_of(name) for name in tools}
    assert all(kept.governance.policy.unavailable(kept.registry.get(name), None) is None for name in tools)


# ------------------------------------------------------------------------- item 3: every read face, every fixture

READ_FACES = sorted((name, face.name) for name in NAMES for face in get_profile(name).faces_of("read_files"))
# Each fixture with the words that prove its content came through (the same words read_files returns).
FIXTURES: dict[str, tuple[bytes, str]] = {
    "doc.pdf": (make_pdf(["Hello page one", "Second page"]), "Second page"),
    "pic.png": (tiny_png(), "image/png"),
    "book.ipynb": (make_notebook(image=tiny_png()), "print('hello')"),
    "blob.bin": (b"\x00\x01\x02\xff" * 10, "binary"),
    "latin.txt": ("caf\xe9 ol\xe9\n".encode("latin-1"), "caf\xe9 ol\xe9"),
    "utf8.txt": ("h\xe9llo\nw\xf6rld \u2028 x\n".encode(), "w\xf6rld"),
}


def _path_args(face: Face, path: str, **extra: Any) -> dict[str, Any]:
    key = next(k for k in face.schema["properties"] if "path" in k)
    value: Any = [path] if face.schema["properties"][key].get("type") == "array" else path
    return {key: value, **{k: v for k, v in extra.items() if k in face.schema["properties"]}}


def _said(result: ToolResult) -> str:
    return json.dumps(result.output, ensure_ascii=False) if not result.is_error else str(result.message)


@pytest.mark.parametrize(("profile", "face_name"), READ_FACES)
@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_every_read_face_returns_what_read_files_returns(
    workspace: Path, profile: str, face_name: str, fixture: str
) -> None:
    data, words = FIXTURES[fixture]
    (workspace / fixture).write_bytes(data)
    canonical = Rig(workspace, config={}).call_sync("read_files", {"paths": [fixture]})
    assert words.lower() in _said(canonical).lower()
    face = get_profile(profile).face(face_name)
    assert face is not None
    result = Rig(workspace, config={}, profile=profile).call_sync(face.name, _path_args(face, fixture))
    assert words.lower() in _said(result).lower(), result
    assert [type(part) for part in result.content] == [type(part) for part in canonical.content]


@pytest.mark.parametrize(("profile", "face_name"), READ_FACES)
def test_a_pdf_page_range_reaches_read_files_through_every_face(workspace: Path, profile: str, face_name: str) -> None:
    (workspace / "doc.pdf").write_bytes(make_pdf(["Hello page one", "Second page"]))
    face = get_profile(profile).face(face_name)
    assert face is not None
    result = Rig(workspace, config={}, profile=profile).call_sync(face.name, _path_args(face, "doc.pdf", pages="2"))
    said = _said(result)
    assert "Second page" in said
    if "pages" in face.schema["properties"]:
        assert "Hello page one" not in said


def test_claude_read_of_a_pdf_as_the_seed_calls_it(workspace: Path) -> None:
    (workspace / "report.pdf").write_bytes(make_pdf(["Quarterly numbers", "Appendix"]))
    for profile in ("claude", "camelagi"):
        rig = Rig(workspace, config={}, profile=profile)
        plain = rig.call_sync("Read", {"file_path": str(workspace / "report.pdf")})
        paged = rig.call_sync("Read", {"file_path": str(workspace / "report.pdf"), "pages": "1-1"})
        assert plain.output is not None and "Quarterly numbers" in plain.output["file"]["content"]
        assert paged.output is not None and "Quarterly numbers" in paged.output["file"]["content"]
        assert "Appendix" not in paged.output["file"]["content"]


# ------------------------------------------------------------------------- item 4: the codebuff seed's calls


def _value(result: ToolResult) -> Any:
    assert not result.is_error, result
    assert result.output is not None and result.output["type"] == "json"
    return result.output["value"]


def test_codebuff_seed_calls_write_list_search_as_written(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.ts").write_text("export const a = 1\n", encoding="utf-8")
    rig = Rig(workspace, config={"approvals": {"mode": "off"}}, profile="codebuff")
    written = _value(rig.call_sync("write_file", {"path": "src/b.ts", "content": "export const b = 2\n"}))
    assert (workspace / "src" / "b.ts").read_text(encoding="utf-8") == "export const b = 2\n"
    assert written["file"] == "src/b.ts"
    listing = _value(rig.call_sync("list_directory", {"directories": ["src", "."]}))
    assert [(r["directory"], sorted(r["files"]), r["count"]) for r in listing["results"]] == [
        ("src", ["a.ts", "b.ts"], 2),
        (".", [], 1),
    ]
    found = _value(rig.call_sync("code_search", {"pattern": "const", "timeoutSeconds": 5}))
    assert "a.ts" in found["stdout"]


def test_codebuff_read_docs_takes_the_seeds_query_and_url_and_the_zod_title_and_topic(
    workspace: Path, http_server: HttpServer
) -> None:
    http_server.route("/d/llms-full.txt", body="# Guide\n\n## Frobnicate\n\nCall frob(3).\n", content_type="text/plain")
    config = {"tool_config": {"read_docs": {"allow_loopback": True}}, "approvals": {"mode": "off"}}
    with Rig(workspace, config=config, profile="codebuff") as rig:
        seed = _value(rig.call_sync("read_docs", {"query": "frobnicate", "url": http_server.url("/d")}))
        assert "frob(3)" in seed["documentation"]
        zod = rig.call_sync("read_docs", {"libraryTitle": "Guide", "topic": "frobnicate", "url": http_server.url("/d")})
        assert "frob(3)" in _value(zod)["documentation"]


def test_codebuff_skill_loads_by_skill_name(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    with Rig(workspace, config={"approvals": {"mode": "off"}}, profile="codebuff") as rig:
        loaded = _value(rig.call_sync("skill", {"skill_name": "pdf-forms"}))
    assert loaded["name"] == "pdf-forms" and loaded["instructions"]


def test_codebuff_ask_user_answers_in_the_seeds_shape(workspace: Path) -> None:
    one = {"question": "Which?", "options": ["a", "b"]}
    many = {"question": "Pick", "options": ["a", "b", "c"], "allowMultipleOptions": True, "allowOtherText": True}

    async def decide(request: ApprovalRequest) -> ApprovalDecision:
        replies = (Reply(("b",)), Reply(("a", "c"), "and d"))
        return ApprovalDecision("allow_once", answers=replies, fingerprint=request.fingerprint)

    rig = Rig(workspace, approval_channel=CallbackChannel(decide), profile="codebuff")
    answers = _value(rig.call_sync("ask_user", {"questions": [one, many]}))["answers"]
    assert answers == [
        {"questionIndex": 0, "selectedOption": "b"},
        {"questionIndex": 1, "selectedOptions": ["a", "c"], "otherText": "and d"},
    ]


def test_codebuff_spawn_agents_answers_one_agent_type_and_value_per_child() -> None:
    face = get_profile("codebuff").face("spawn_agents")
    assert face is not None and face.result_out is not None
    children = [
        {"task_id": "t1", "agent_type": "planner", "status": "done", "output": {"plan": ["a"]}},
        {"task_id": "t2", "agent_type": "file-picker", "status": "done", "output": "src/a.ts"},
    ]
    call = {"agents": [{"agent_type": "planner", "params": {"filePaths": ["src/auth.ts"]}}]}
    args = face.args_in(call, [])
    assert args["agents"][0]["prompt"] == 'Parameters: {"filePaths": ["src/auth.ts"]}'
    out = face.result_out(Shaped({"results": children}, call, args))
    assert out == {
        "type": "json",
        "value": [
            {"agentName": "planner", "agentType": "planner", "value": {"plan": ["a"]}},
            {"agentName": "file-picker", "agentType": "file-picker", "value": "src/a.ts"},
        ],
    }


# ------------------------------------------------------------------------- item 8: smart approvals read freely

# The tools seed 002's smart mode auto-approves, each with a call that only reads.
SEED_AUTO = ("Read", "Glob", "Grep", "WebSearch", "WebFetch", "memory_search", "memory_get")


def _smart(workspace: Path, profile: str) -> Rig:
    config = {
        "approvals": {"mode": "smart", "fallback": "deny"},
        "tool_config": {"fetch_url": {"allow_loopback": True}},
    }
    return Rig(workspace, config=config, profile=profile)


@pytest.mark.parametrize("profile", NAMES)
def test_smart_approvals_let_a_get_run_and_ask_for_a_post_in_every_profile(
    workspace: Path, http_server: HttpServer, profile: str
) -> None:
    http_server.route("/page", body="hello from the page", content_type="text/plain")
    rig = _smart(workspace, profile)
    fetch = get_profile(profile).faces_of("fetch_url")
    name = fetch[0].name if fetch else "fetch_url"
    call: dict[str, Any] = {"url": http_server.url("/page")}
    if fetch and "prompt" in fetch[0].schema["properties"]:
        call["prompt"] = "What does the page say?"  # Claude's WebFetch call, as the seed writes it
    got = rig.call_sync(name, call if fetch else {**call, "method": "GET"})
    assert not got.is_error, got
    assert "hello from the page" in _said(got)
    posted = rig.call_sync("fetch_url", {"url": http_server.url("/page"), "method": "POST", "body": "x"})
    assert posted.is_error and posted.error_type in ("denied", "approval_required"), posted


def test_every_tool_seed_002_auto_approves_is_read_only_or_reads_only_on_a_get() -> None:
    from toolrig.registry import Registry

    catalog = Registry.default(entry_points=False)
    for name in SEED_AUTO:
        [tool] = [catalog.find(t) for t in (tools_named(name) or (name,))]
        assert tool is not None, name
        assert tool.read_only or tool.reads_only({"url": "https://example.org/"}), name  # type: ignore[attr-defined]


# ------------------------------------------------------------------------- items 9 and 10: the seeds' defaults


def test_camelagi_memory_search_answers_in_the_seeds_text(workspace: Path) -> None:
    (workspace / "MEMORY.md").write_text("# Decisions\n\nWe deploy on Fridays.\n", encoding="utf-8")
    (workspace / "memory").mkdir()
    (workspace / "memory" / "notes.md").write_text("deploy checklist: run tests first\n", encoding="utf-8")
    rig = Rig(workspace, config={}, profile="camelagi")
    found = rig.call_sync("memory_search", {"query": "deploy", "maxResults": None})
    assert found.output is not None
    hits = found.output["result"].split("\n\n---\n\n")
    assert len(hits) == 2
    for n, hit in enumerate(hits, 1):
        header, _, body = hit.partition("\n")
        assert re.fullmatch(rf"\[{n}\] (MEMORY\.md|memory/notes\.md) \(score: [0-9.e+-]+\)", header), header
        assert "deploy" in body


SHELL_WORDS = ["$HOME", "*", "a;b", "`id`", "$(id)", "a|b", ">made", "~", "{a,b}", "!!"]


@pytest.mark.parametrize("word", SHELL_WORDS)
def test_native_run_command_is_argv_style_no_expansion(workspace: Path, word: str) -> None:
    rig = Rig(workspace, config={"approvals": {"mode": "off"}}, profile="native")
    result = rig.call_sync("run_command", {"command": f"printf '%s\\n' {word}"})
    assert result.output is not None and result.output["success"], result
    assert result.output["data"]["stdout"] == word + "\n"
    assert not (workspace / "made").exists()


def test_seed_004s_echo_home_star_is_literal_unless_the_call_asks_for_a_shell(workspace: Path) -> None:
    (workspace / "one.txt").write_text("1", encoding="utf-8")
    rig = Rig(workspace, config={"approvals": {"mode": "off"}}, profile="native")
    literal = rig.call_sync("run_command", {"command": "echo $HOME *"})
    assert literal.output is not None and literal.output["data"]["stdout"] == "$HOME *\n"
    shell = rig.call_sync("run_command", {"command": "echo $HOME *", "shell": True})
    assert shell.output is not None and shell.output["data"]["stdout"].strip().endswith("one.txt")
    plain = Rig(workspace, config={"approvals": {"mode": "off"}}).call_sync("run_command", {"command": "echo *"})
    assert plain.output is not None and plain.output["stdout"] == "one.txt\n"  # toolrig's own default: bash
    broken = rig.call_sync("run_command", {"command": "echo 'unclosed"})
    assert broken.is_error and broken.error_type == "invalid_input"


def test_a_bad_memory_get_call_names_the_parameter_as_it_is_written(workspace: Path) -> None:
    (workspace / "MEMORY.md").write_text("a\nb\n", encoding="utf-8")
    result = Rig(workspace, config={}).call_sync("memory_get", {"file_path": "MEMORY.md", "from": "x"})
    assert result.is_error and "'from'" in (result.next_action_hint or "")
    assert "from_" not in (result.next_action_hint or "")


# ------------------------------------------------------------------------- item 2 (part): organism.yaml names

SEED_004_ORGANISM = """\
organism:
  name: research-org
listeners:
  - name: researcher
    agent: true
    description: Reads the research notes and fetches sources
    prompt: You are a research assistant.
    tools: [read_file, fetch_url]
    tool_config:
      read_file: {allowed_paths: ["data/research/**"]}
      fetch_url: {allowed_domains: ["docs.example.com"]}
"""


def test_seed_004s_organism_tool_config_under_the_native_name_binds_the_tool(workspace: Path) -> None:
    (workspace / "organism.yaml").write_text(SEED_004_ORGANISM, encoding="utf-8")
    set_trust(workspace)
    found = load_agent_types(workspace, config_from({}), log_warnings=False)
    researcher = found.get("researcher")
    assert researcher is not None
    assert researcher.profile.tool_config == {
        "read_files": {"allowed_paths": ["data/research/**"]},
        "fetch_url": {"allowed_domains": ["docs.example.com"]},
    }
    assert researcher.profile.tools is not None and "read_files" in researcher.profile.tools


@pytest.mark.parametrize(("alias", "tool"), sorted({(f.name, f.tool) for f in all_faces()}))
def test_every_profile_name_keys_its_tools_settings(alias: str, tool: str) -> None:
    assert by_tool_name({alias: {"x": 1}}) == {tool: {"x": 1}} or tool in by_tool_name({alias: {"x": 1}})
    assert by_tool_name({alias: {"x": 1}, tool: {"y": 2}})[tool] == {"y": 2}  # the tool's own name wins


# ------------------------------------------------------------------------- item 2: every place a tool is named


@pytest.mark.parametrize(("alias", "tool"), sorted({(f.name, f.tool) for f in all_faces()}))
def test_a_profile_name_is_accepted_in_tool_config_and_agent_tool_lists(workspace: Path, alias: str, tool: str) -> None:
    config = {
        "tool_config": {alias: {}},
        "agents": {"a": {"tools": [alias], "tool_config": {alias: {}}}},
        "tools": {"rules": [{"tool": alias, "verdict": "ask"}]},
        "rate_limits": {alias: "100/minute"},
        "approvals": {"allow": [alias]},
    }
    rig = Rig(workspace, config=config)
    assert tool in rig.config.tool_config and tool in rig.config.agents["a"].tool_config
    assert not [w for w in rig.warnings if alias in str(w)]
    assert tool in {t.name for t in Rig(workspace, config=config, agent="a").tools()}
