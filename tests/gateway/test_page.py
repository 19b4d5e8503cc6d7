"""The web page in a real headless browser (Debian's Chromium through Playwright) against the real gateway."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.fake_llm import Call, Text, reply

CHROMIUM = "/usr/bin/chromium"
SMART = {"approvals": {"mode": "smart", "fallback": "deny"}}
expect.set_options(timeout=30_000)  # a loaded machine: the first run imports the provider SDK
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'

pytestmark = [pytest.mark.slow, pytest.mark.servers]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Playwright's sync API keeps an asyncio loop running on the main thread while it is open: held for the session,
    every later test in that worker that runs its own loop (asyncio.run, anyio.run) failed. Closed with the module."""
    if not os.path.exists(CHROMIUM):
        raise RuntimeError("the page tests need Chromium: apt-get install -y chromium (and pip install playwright)")
    with sync_playwright() as p:
        opened = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        yield opened
        opened.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="toolrig-gateway-shots-"))
    print(f"\nscreenshots of the gateway page: {folder}")
    return folder


def signed_in(browser: Browser, base: str, token: str) -> Page:
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{base}/login?token={token}")
    assert page.url == f"{base}/", "the login link redirects to the page, the token out of the address"
    assert page.evaluate("document.cookie") == "", "the cookie is HttpOnly: no script can read it"
    page.set_default_timeout(20_000)
    page.errors = errors  # type: ignore[attr-defined]
    return page


def send(page: Page, prompt: str) -> None:
    page.fill("#prompt", prompt)
    page.click("#send")


def test_a_person_chats_approves_a_call_from_its_card_and_sees_the_answer(
    serve: Any, browser: Browser, shots: Path
) -> None:
    gw = serve(**SMART)
    gw.llm.script(
        reply(Text("I will wipe ", "the cache."), Call("c1", "wipe", '{"target": "cache"}')),
        reply(
            Text("The cache ", "is wiped."),
            Call("f1", "suggest_followups", '{"followups": ["Check disk usage", "Wipe the logs"]}'),
        ),
        reply(Text("All set.")),
        reply(Text("Disk usage is fine.")),
    )
    page = signed_in(browser, gw.base, gw.token)
    send(page, "please wipe the cache")
    card = page.locator(".card.approval")
    expect(card).to_contain_text("Approve wipe?")
    expect(card.locator("pre")).to_have_text('{"target": "cache"}')
    expect(page.locator("#log")).to_contain_text("I will wipe the cache.")
    page.screenshot(path=str(shots / "approval-card.png"))
    card.get_by_role("button", name="Approve once").click()
    expect(page.locator("#log")).to_contain_text("✓ wipe")
    expect(page.locator("#log")).to_contain_text("The cache is wiped.")
    expect(page.locator("#log")).to_contain_text("All set.")
    expect(page.locator("#followups button")).to_have_text(["Check disk usage", "Wipe the logs"])
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator("#send")).to_be_enabled()
    page.screenshot(path=str(shots / "chat.png"))
    page.locator("#followups button").first.click()  # a follow-up is a prompt in the same session
    expect(page.locator("#log")).to_contain_text("Disk usage is fine.")
    assert "Check disk usage" in str(gw.llm.bodies()[-1]["messages"][-1])
    page.get_by_role("button", name="Audit").click()  # the approved call is in the audit view
    expect(page.locator("#audit tbody")).to_contain_text("wipe")
    page.fill("#audit-tool", "suggest_*")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#audit tbody tr")).to_have_count(1)
    page.screenshot(path=str(shots / "audit.png"))
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_question_card_is_answered_by_picking_an_option(serve: Any, browser: Browser) -> None:
    gw = serve()
    ask = '{"questions": [{"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}]}'
    gw.llm.script(reply(Call("q1", "ask_user", ask)), reply(Text("SQLite it is.")))
    page = signed_in(browser, gw.base, gw.token)
    send(page, "set up a database")
    card = page.locator(".card.question")
    expect(card).to_contain_text("Which database?")
    card.get_by_role("button", name="SQLite").click()
    card.get_by_role("button", name="Answer").click()
    expect(page.locator("#log")).to_contain_text("SQLite it is.")
    assert "SQLite" in str(gw.llm.bodies()[-1]["messages"][-1])


def test_hostile_model_text_and_tool_results_are_shown_as_text_and_never_run(serve: Any, browser: Browser) -> None:
    gw = serve()
    gw.llm.script(
        reply(Text(HOSTILE), Call("n1", "note", json.dumps({"name": HOSTILE}))),
        reply(Text("after " + HOSTILE)),
    )
    page = signed_in(browser, gw.base, gw.token)
    send(page, "show me")
    expect(page.locator("#log")).to_contain_text("after <img src=x")
    assert page.evaluate("window.__pwned") is None, "no script the model or a tool wrote ran"
    assert page.locator("#log img, #log script").count() == 0
    expect(page.locator("#log .tool").last).to_contain_text("<script>window.__pwned=2</script>")


def test_a_subagent_has_a_live_line_that_ends_done_and_its_calls_show_indented(serve: Any, browser: Browser) -> None:
    from tests.support.subagent_conversations import install

    gw = serve()
    spawn = json.dumps({"agents": [{"agent_type": "general", "prompt": "job ALPHA"}], "background": False})
    install(
        gw.llm,
        {
            "PARENT": [reply(Call("p1", "spawn_agents", spawn)), reply(Text("the child is done"))],
            "ALPHA": [reply(Call("a1", "note", '{"name": "alpha"}')), reply(Text("alpha finished"))],
        },
    )
    try:
        page = signed_in(browser, gw.base, gw.token)
        send(page, "PARENT: delegate this")
        expect(page.locator("#log")).to_contain_text("the child is done")
        expect(page.locator("#log .subagent")).to_contain_text("general")
        expect(page.locator("#log .subagent")).to_contain_text(": done")
        expect(page.locator("#log .tool.sub").first).to_contain_text("note")
    finally:
        gw.llm.responder = None


def test_a_run_paused_before_a_restart_is_approved_from_the_page_after_it(
    serve: Any, browser: Browser, shots: Path
) -> None:
    first = serve(**SMART)
    first.llm.script(reply(Call("c1", "wipe", '{"target": "logs"}')), reply(Text("Logs wiped after the restart.")))
    with first.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe the logs"}).json()
        next(e for e in first.events(client, run["id"]) if e["type"] == "pending")
    first.stop()
    second = serve(**SMART)
    page = signed_in(browser, second.base, second.token)
    page.locator("#runs li", has_text="waits for you").click()
    expect(page.locator("#log .msg.user")).to_have_text("wipe the logs")  # the conversation before the pause
    expect(page.locator("#log .tool").first).to_contain_text("→ wipe(")
    card = page.locator(".card.approval")
    expect(card.locator("pre")).to_have_text('{"target": "logs"}')
    page.screenshot(path=str(shots / "restored-run.png"))
    card.get_by_role("button", name="Approve once").click()
    expect(page.locator("#log")).to_contain_text("Logs wiped after the restart.")
    expect(page.locator("#runs li")).to_have_count(0)


def test_allow_always_from_a_card_lets_the_next_such_call_run_without_one(
    serve: Any, browser: Browser, shots: Path
) -> None:
    gw = serve(**SMART)
    gw.llm.script(
        reply(Call("c1", "wipe", '{"target": "cache"}')),
        reply(Text("Cache wiped.")),
        reply(Call("c2", "wipe", '{"target": "logs"}')),
        reply(Text("Logs wiped, no question asked.")),
    )
    page = signed_in(browser, gw.base, gw.token)
    send(page, "wipe the cache")
    card = page.locator(".card.approval")
    expect(card.locator("input.pattern")).to_have_attribute("placeholder", "wipe")  # what "always" saves
    page.screenshot(path=str(shots / "allow-always.png"))
    card.get_by_role("button", name="Allow always").click()
    expect(page.locator("#log")).to_contain_text("Cache wiped.")
    expect(page.locator("#send")).to_be_enabled()
    send(page, "now the logs")
    expect(page.locator("#log")).to_contain_text("Logs wiped, no question asked.")
    expect(page.locator(".card")).to_have_count(0)
    with gw.client() as client:
        rows = client.get("/api/audit?tool=wipe").json()["rows"]
    assert {r["call_id"]: r["approval"] for r in rows}["c1"] == "allow_always"
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_run_on_another_server_of_the_workspace_is_approved_from_this_ones_page(
    serve: Any, browser: Browser, shots: Path
) -> None:
    one, other = serve(**SMART), serve(**SMART)  # one workspace, one runs board
    one.llm.script(reply(Call("c1", "wipe", '{"target": "tmp"}')), reply(Text("Wiped, approved on the other server.")))
    with one.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe tmp"}).json()
        next(e for e in one.events(client, run["id"]) if e["type"] == "pending")
    page = signed_in(browser, other.base, other.token)
    page.locator("#runs li", has_text="another server").click()
    card = page.locator(".card.approval")
    expect(card.locator("pre")).to_have_text('{"target": "tmp"}')
    page.screenshot(path=str(shots / "run-on-another-server.png"))
    card.get_by_role("button", name="Approve once").click()  # forwarded to the server running it
    expect(page.locator("#log")).to_contain_text("Wiped, approved on the other server.")  # its session, once done
    with one.client() as client:
        assert client.get(f"/api/runs/{run['id']}").json()["status"] == "completed"
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_page_without_its_cookie_says_how_to_sign_in(serve: Any, browser: Browser) -> None:
    gw = serve()
    page = browser.new_page()
    page.goto(f"{gw.base}/login?token=wrong-token-xxxxxxxxxxxxxxxx")
    assert "login link is wrong" in page.content()
    page.goto(f"{gw.base}/")
    expect(page.locator("#login")).to_be_visible()
    page.close()


def test_a_person_rewinds_a_sessions_files_per_turn_after_seeing_the_dry_run(
    serve: Any, browser: Browser, shots: Path, workspace: Path
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from tests.gateway.test_rewind import BEFORE, HOSTILE_NAME, _agent_turns, _session

    gw = serve()
    with gw.client() as client:
        session = _session(gw, client)
    with ThreadPoolExecutor(1) as other:  # the file tools run their own loop: not on Playwright's thread
        other.submit(_agent_turns, workspace, session).result()  # turn 0: data.bin; turn 1: a hostile file name
    page = signed_in(browser, gw.base, gw.token)
    page.locator("#sessions li").first.click()
    turns = page.locator("#turns li")
    expect(turns).to_have_count(2)
    expect(turns.nth(1)).to_contain_text(f"made/{HOSTILE_NAME}")  # shown as text, never parsed
    expect(turns.nth(1)).to_contain_text("changed by commands, not restorable: built.o")
    turns.nth(1).get_by_role("button", name="Rewind").click()
    plan = page.locator("#rewind-plan .plan")
    expect(plan).to_contain_text("Would remove")
    expect(plan).to_contain_text(HOSTILE_NAME)
    assert (workspace / "made").exists(), "the dry run changed nothing"
    page.screenshot(path=str(shots / "rewind-dry-run.png"))
    plan.get_by_role("button", name="Confirm rewind").click()
    expect(page.locator("#rewind-plan")).to_contain_text("Rewound to before turn 1.")
    expect(turns).to_have_count(1)
    assert not (workspace / "made").exists()
    (workspace / "data.bin").write_bytes(b"a person's edit\n")
    turns.first.get_by_role("button", name="Rewind").click()
    expect(plan).to_contain_text("data.bin: it was edited since")
    expect(plan.get_by_role("button", name="Confirm rewind")).to_have_count(0)  # refused unless forced
    page.screenshot(path=str(shots / "rewind-refused.png"))
    plan.get_by_role("button", name="Overwrite their changes and rewind").click()
    expect(page.locator("#rewind-plan")).to_contain_text("Rewound to before turn 0.")
    expect(page.locator("#rewind-box")).to_be_hidden()
    assert (workspace / "data.bin").read_bytes() == BEFORE
    assert page.evaluate("window.__pwned") is None and page.locator("#turns img, #rewind-plan img").count() == 0
    assert page.errors == []  # type: ignore[attr-defined]
