"""Per-tool settings as the seed's organism.yaml has them, globally and per agent (issue 18 item 4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import HttpServer
from tests.support.file_helpers import write
from toolrig.errors import ConfigError
from toolrig.rig import Rig

ORGANISM = """\
tool_config:
  read_files: {allowed_paths: ["docs/**"]}
  fetch_url: {allow_loopback: true}
agents:
  researcher:
    tools: [fetch_url, read_files]
    tool_config:
      fetch_url: {allowed_domains: ["docs.example.com"]}
      read_files: {allowed_paths: ["data/research/**"]}
  writer:
    tools: [write_file, send_email]
    tool_config:
      write_file: {allowed_paths: ["output/**"]}
      send_email: {host: 127.0.0.1, port: 1, allowed_recipients: ["team@example.com"]}
"""


@pytest.fixture
def organism(workspace: Path, user_config: Callable[[str], Path]) -> Path:
    user_config(ORGANISM)
    write(workspace, {"docs/a.md": "doc\n", "data/research/r.txt": "research\n", "src/app.py": "code\n"})
    return workspace


def test_read_files_allowed_paths_narrow_the_workspace_globally_and_per_agent(organism: Path) -> None:
    everyone = Rig(organism)
    assert not everyone.call_sync("read_files", {"paths": ["docs/a.md"]}).is_error
    refused = everyone.call_sync("read_files", {"paths": ["src/app.py"]})
    assert refused.is_error and refused.error_type == "denied" and "may use here" in (refused.message or "")
    researcher = Rig(organism, agent="researcher")
    mixed = researcher.call_sync("read_files", {"paths": ["data/research/r.txt", "docs/a.md"]}).raise_for_error()
    assert "research" in mixed["files"]["data/research/r.txt"]
    assert mixed["files"]["docs/a.md"].startswith("[OUTSIDE PROJECT]") and "may use here" in mixed["files"]["docs/a.md"]


def test_write_file_allowed_paths_refuse_a_write_elsewhere_and_write_nothing(organism: Path) -> None:
    writer = Rig(organism, agent="writer")
    assert not writer.call_sync("write_file", {"path": "output/report.md", "content": "ok"}).is_error
    for path in ("src/app.py", "output/../src/app.py", "new.txt"):
        result = writer.call_sync("write_file", {"path": path, "content": "pwned"})
        assert result.is_error and result.error_type == "denied", path
    assert (organism / "src/app.py").read_text() == "code\n" and not (organism / "new.txt").exists()
    assert not Rig(organism).call_sync("write_file", {"path": "new.txt", "content": "fine"}).is_error


def test_fetch_url_allowed_domains_apply_per_agent(organism: Path, http_server: HttpServer) -> None:
    http_server.route("/settings/page", body=b"hello", content_type="text/plain")
    url = http_server.url("/settings/page")
    assert not Rig(organism).call_sync("fetch_url", {"url": url}).is_error
    refused = Rig(organism, agent="researcher").call_sync("fetch_url", {"url": url})
    assert refused.is_error and refused.error_type == "denied" and "allowlist" in (refused.message or "")


def test_send_email_allowed_recipients_apply_per_agent(organism: Path) -> None:
    refused = Rig(organism, agent="writer").call_sync(
        "send_email", {"to": ["boss@elsewhere.test"], "subject": "hi", "body": "x"}
    )
    assert refused.is_error and refused.error_type == "denied"


def test_an_allowed_path_that_climbs_out_is_a_config_error_naming_the_key(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config("tool_config:\n  write_file: {allowed_paths: ['../elsewhere/**']}\n")
    with pytest.raises(ConfigError, match=r"tool_config\.write_file\.allowed_paths"):
        Rig(workspace).tools()


def test_an_untrusted_workspace_may_narrow_allowed_paths_but_never_widen_them(
    organism: Path, user_config: Callable[[str], Path]
) -> None:
    user_config('tool_config:\n  read_files: {allowed_paths: ["docs/**", "data/**"]}\n')
    (organism / ".toolrig").mkdir(exist_ok=True)
    config = organism / ".toolrig" / "config.yaml"
    config.write_text('tool_config:\n  read_files: {allowed_paths: ["docs/**", "src/**"]}\n')
    rig = Rig(organism)
    assert not rig.call_sync("read_files", {"paths": ["docs/a.md"]}).is_error
    for path in ("src/app.py", "data/research/r.txt"):  # src/ was never allowed; data/ the workspace dropped
        assert rig.call_sync("read_files", {"paths": [path]}).error_type == "denied", path
    config.write_text('tool_config:\n  read_files: {allowed_paths: ["src/**"]}\n')
    assert Rig(organism).call_sync("read_files", {"paths": ["src/app.py"]}).error_type == "denied"
    assert Rig(organism).call_sync("read_files", {"paths": ["docs/a.md"]}).error_type == "denied"
