"""``toolrig serve`` as a user runs it: a process, the URL and the login link on stderr, the kept token."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
import yaml

from tests.agent.conftest import agent_config
from tests.support.fake_llm import FakeLLM, Text, reply

pytestmark = [pytest.mark.slow]


def test_toolrig_serve_prints_its_url_and_login_link_and_answers_with_the_kept_token(
    workspace: Path, tmp_path: Path, llm: FakeLLM
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(agent_config(llm, "anthropic")))  # the user's own: trusted
    env = {**os.environ, "TOOLRIG_HOME": str(home)}
    env.pop("TOOLRIG_GATEWAY_TOKEN", None)
    command = [sys.executable, "-m", "toolrig", "serve", "--root", str(workspace), "--port", "0"]
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert first.startswith("toolrig: gateway listening on http://127.0.0.1:"), first
        base = first.rsplit(" ", 1)[1].strip()
        lines = [process.stderr.readline() for _ in range(2)]
        login = next(line for line in lines if "/login?token=" in line).rsplit(" ", 1)[1].strip()
        token = (tmp_path / "home/tokens/gateway.token").read_text().strip()
        assert login == f"{base}/login?token={token}"
        assert oct((tmp_path / "home/tokens/gateway.token").stat().st_mode & 0o777) == "0o600"
        llm.script(reply(Text("served")))
        with httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
            assert client.get("/api/sessions", headers={"Authorization": ""}).status_code == 401
            run = client.post("/api/runs", json={"prompt": "hi"})
            assert run.status_code == 201, run.text
            with client.stream("GET", f"/api/runs/{run.json()['id']}/events") as events:
                body = "".join(events.iter_text())
            assert '"response": "served"' in body
    finally:
        process.terminate()
        process.wait(30)
        if process.stderr is not None:
            process.stderr.close()


def test_toolrig_serve_refuses_no_token_beyond_loopback(workspace: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TOOLRIG_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "toolrig", "serve", "--root", str(workspace), "--host", "0.0.0.0", "--no-token"]  # noqa: S104
    done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "without a token" in done.stderr
