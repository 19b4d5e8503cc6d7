"""Properties of the one gate, for random configs and calls drawn from the catalog (hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import Rig
from toolrig.config.narrowing import _narrow_value
from toolrig.narrowing import Narrow
from toolrig.policy.audit import AuditLog
from toolrig.sandbox.patterns import PatternSet

# ------------------------------------------------------------------------------ explain == executor == audit

TOOLS = ["calculate", "read_files", "write_file", "run_command", "list_directory", "glob", "code_search"]
SUBJECTS = ["secrets/**", "*.md", "docs/*", "rm *", "git *", "a.txt", "**"]
CALLS: dict[str, list[dict[str, Any]]] = {
    "calculate": [{"expression": "1+1"}, {"expresion": "2"}],
    "read_files": [{"paths": ["a.txt"]}, {"paths": ["secrets/k", "docs/x.md"]}, {"paths": []}],
    "write_file": [{"path": "docs/new.md", "content": "x"}, {"path": "a/../secrets/k", "content": "x"}],
    "run_command": [{"command": "git status"}, {"command": "rm -rf x"}, {"command": "echo hi; git push"}],
    "list_directory": [{"directories": [{"path": "."}]}, {"directories": [{"path": "secrets"}]}],
    "glob": [{"pattern": "*.md"}, {"pattern": "*", "cwd": "secrets"}],
    "code_search": [{"pattern": "x"}, {"pattern": "x", "cwd": "docs"}],
}

rules = st.lists(
    st.fixed_dictionaries(
        {
            "tool": st.sampled_from([*TOOLS, "*"]),
            "verdict": st.sampled_from(["allow", "ask", "deny"]),
        },
        optional={"subject": st.sampled_from(SUBJECTS)},
    ),
    max_size=4,
)
configs = st.fixed_dictionaries(
    {
        "tools": st.fixed_dictionaries(
            {"rules": rules},
            optional={"deny": st.lists(st.sampled_from(TOOLS), max_size=2, unique=True)},
        ),
        "approvals": st.fixed_dictionaries(
            {"mode": st.sampled_from(["off", "smart", "always"])},
            optional={"allow": st.lists(st.sampled_from(["run_command:git *", "read_files", "write_file:docs/*"]))},
        ),
        "tool_config": st.sampled_from([{}, {"run_command": {"deny": ["git push *"]}}]),
    }
)
calls = st.sampled_from([*TOOLS, "no_such_tool"]).flatmap(
    lambda name: st.tuples(st.just(name), st.sampled_from(CALLS.get(name, [{}])))
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, call=calls)
def test_explain_the_executor_and_the_audit_row_agree(config: dict[str, Any], call: tuple[str, dict[str, Any]]) -> None:
    name, args = call
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "secrets").mkdir()
        (root / "docs").mkdir()
        rig = Rig(root, config=config)  # no approval channel: an "ask" gets the fallback (deny)
        explained, _ = anyio.run(lambda: rig.executor.decide(name, args))
        rig.call_sync(name, args)
        log = AuditLog(root / ".toolrig")
        try:
            [row] = log.query(limit=None)
        finally:
            log.close()
            rig.close()
        assert row.rule == explained.decided_by, (config, call)
        if explained.verdict == "ask":
            assert row.decision == "deny" and row.approval, (config, call)  # asked, nobody answered
        else:
            assert row.decision == (explained.verdict or ("error" if row.is_error else "allow")), (config, call)


# ------------------------------------------------------------------------------ the same, under profile names

# (profile, the name a model of that profile calls, arguments in that profile's shape)
PROFILE_CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("claude", "Bash", {"command": "git status"}),
    ("claude", "Bash", {"command": "rm -rf x", "timeout": 5000}),
    ("claude", "Read", {"file_path": "a.txt"}),
    ("claude", "Read", {"file_path": "secrets/k"}),
    ("claude", "Write", {"file_path": "docs/new.md", "content": "x"}),
    ("claude", "Glob", {"pattern": "*.md"}),
    ("claude", "Grep", {"pattern": "x", "path": "docs"}),
    ("codebuff", "run_terminal_command", {"command": "git push"}),
    ("codebuff", "write_file", {"path": "docs/n.md", "instructions": "new", "content": "x"}),
    ("native", "read_file", {"path": "secrets/k"}),
    ("native", "list_dir", {"path": "secrets"}),
    ("camelagi", "Bash", {"command": "echo hi; git push"}),
    ("camelagi", "Edit", {"file_path": "a.txt", "old_string": "a", "new_string": "b"}),
]
FACE_NAMES = sorted({name for _, name, _ in PROFILE_CALLS} | {"Bash", "Write", "Read", "read_file"})
profile_rules = st.lists(
    st.fixed_dictionaries(
        {"tool": st.sampled_from([*TOOLS, *FACE_NAMES, "*"]), "verdict": st.sampled_from(["allow", "ask", "deny"])},
        optional={"subject": st.sampled_from(SUBJECTS)},
    ),
    max_size=4,
)
profile_configs = st.fixed_dictionaries(
    {
        "tools": st.fixed_dictionaries(
            {"rules": profile_rules},
            optional={"deny": st.lists(st.sampled_from([*TOOLS, *FACE_NAMES]), max_size=2, unique=True)},
        ),
        "approvals": st.fixed_dictionaries(
            {"mode": st.sampled_from(["off", "smart", "always"])},
            optional={"allow": st.lists(st.sampled_from(["Bash:git *", "Write:/docs/*", "Read", "read_file:a.txt"]))},
        ),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=profile_configs, call=st.sampled_from(PROFILE_CALLS))
def test_explain_under_a_profile_name_agrees_with_the_call_under_that_profile_and_its_audit_row(
    config: dict[str, Any], call: tuple[str, str, dict[str, Any]]
) -> None:
    profile, name, args = call
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "secrets").mkdir()
        (root / "docs").mkdir()
        (root / "a.txt").write_text("a\n")
        rig = Rig(root, config=config)
        explained, _ = anyio.run(lambda: rig.decide(name, args, profile=profile))
        rig.call_sync(name, args, profile=profile)
        log = AuditLog(root / ".toolrig")
        try:
            [row] = log.query(limit=None)
        finally:
            log.close()
            rig.close()
        assert explained.called_as == name, (config, call)
        # The audit keeps the model's name only when it differs from the tool's own (codebuff's write_file is
        # toolrig's write_file), so a row never names the same tool twice.
        assert row.called_as == (name if name != explained.name else None), (config, call)
        assert row.tool == explained.name, (config, call)  # the canonical tool, not the profile's name
        assert row.rule == explained.decided_by, (config, call)
        if explained.verdict == "ask":
            assert row.decision == "deny" and row.approval, (config, call)
        else:
            assert row.decision == (explained.verdict or ("error" if row.is_error else "allow")), (config, call)


# ------------------------------------------------------------------------------ D3: untrusted globs never lift


segment = st.sampled_from(["a", "b", ".env", "x.pem", "vendor", "*.pem", "*", "**"])
patterns = st.lists(st.builds(lambda neg, parts: ("!" if neg else "") + "/".join(parts), st.booleans(),
                              st.lists(segment, min_size=1, max_size=3)), max_size=5)  # fmt: skip
paths = st.lists(st.sampled_from(["a", "b", ".env", "x.pem", "vendor"]), min_size=1, max_size=3).map("/".join)


@settings(max_examples=300, deadline=None)
@given(user=patterns, theirs=patterns, path=paths)
def test_nothing_the_users_globs_deny_is_lifted_by_an_untrusted_workspace(
    user: list[str], theirs: list[str], path: str
) -> None:
    warnings: list[str] = []
    merged = _narrow_value(Narrow.GLOBS, user, theirs, "workspace.deny_globs", warnings)
    if user and PatternSet(user).matches_path_or_parent(path) is not None:
        assert PatternSet(merged).matches_path_or_parent(path) is not None, (user, theirs, path)
    if any(p.startswith("!") for p in theirs):
        assert warnings
