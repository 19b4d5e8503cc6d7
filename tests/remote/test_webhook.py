from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest

from tests.support.servers import HttpServer, Seen
from toolrig.approvals import ApprovalRequest, fingerprint
from toolrig.approvals.broker import ApprovalBroker
from toolrig.event_bus import NullSink
from toolrig.remote.webhook import SIGNATURE, TIMESTAMP, WebhookChannel, _Open, sign, signed_headers

pytestmark = pytest.mark.anyio
SECRET = b"shared-secret"


def request(command: str, call_id: str = "c1") -> ApprovalRequest:
    args = {"command": command}
    return ApprovalRequest(call_id, "run_command", args, fingerprint=fingerprint("run_command", args))


class Portal:
    """The person's system: takes requests at /hook and serves an answer per request id at /poll."""

    def __init__(self, server: HttpServer, prefix: str) -> None:
        self.received: list[Seen] = []
        self.answers: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.arrived = anyio.Event()
        self.hook, self.poll = server.url(f"/{prefix}/hook"), server.url(f"/{prefix}/poll")
        server.routes[f"/{prefix}/hook"] = self._hook
        server.routes[f"/{prefix}/poll"] = lambda seen: self.answers.get(seen.query["id"][0], (204, {}, b""))

    def _hook(self, seen: Seen) -> tuple[int, dict[str, str], bytes]:
        self.received.append(seen)
        return 202, {}, b""

    def answer(self, request_id: str, verdict: str, *, secret: bytes = SECRET, at: float | None = None) -> None:
        body = json.dumps({"id": request_id, "verdict": verdict}).encode()
        self.answers[request_id] = (200, signed_headers(secret, body, at), body)


async def received(portal: Portal, count: int) -> list[dict[str, Any]]:
    with anyio.fail_after(20):
        while len(portal.received) < count:
            await anyio.sleep(0.01)
    return [seen.json() for seen in portal.received]


async def test_a_signed_request_goes_out_and_a_signed_answer_is_taken_by_polling(http_server: HttpServer) -> None:
    portal = Portal(http_server, "ok")
    channel = WebhookChannel(portal.hook, SECRET, poll_url=portal.poll, poll_interval=0.05)

    async def person() -> None:
        (sent,) = await received(portal, 1)
        portal.answer(sent["id"], "allow_once")

    async with anyio.create_task_group() as group:
        group.start_soon(person)
        decisions = await channel.decide([request("git push")])
    assert [d.verdict for d in decisions] == ["allow_once"] and decisions[0].fingerprint == request(
        "git push"
    ).fingerprint
    seen = portal.received[0]
    assert seen.headers[SIGNATURE] == sign(SECRET, seen.body, int(seen.headers[TIMESTAMP]))
    assert seen.json()["tool"] == "run_command" and seen.json()["arguments"] == {"command": "git push"}


@pytest.mark.parametrize(
    ("forge", "why"),
    [
        ({"secret": b"wrong"}, "bad_signature"),
        ({"at": time.time() - 3600}, "stale"),
    ],
)
async def test_forged_or_stale_answers_are_refused_and_the_request_stays_open(
    http_server: HttpServer, forge: dict[str, Any], why: str
) -> None:
    portal = Portal(http_server, f"forge-{why}")
    channel = WebhookChannel(portal.hook, SECRET, poll_url=portal.poll, poll_interval=0.05)

    async def person() -> None:
        (sent,) = await received(portal, 1)
        portal.answer(sent["id"], "allow_always", **forge)
        with anyio.fail_after(20):
            while not channel.refused:
                await anyio.sleep(0.01)
        portal.answer(sent["id"], "deny")

    async with anyio.create_task_group() as group:
        group.start_soon(person)
        decisions = await channel.decide([request("git push")])
    assert [d.verdict for d in decisions] == ["deny"]
    assert channel.refused[0].why == why


def test_a_callback_answer_is_accepted_once_and_an_unsigned_or_replayed_one_refused() -> None:
    channel = WebhookChannel("http://127.0.0.1:9/unused", SECRET)
    channel._open["rid"] = slot = _Open(request("ls"))  # as decide() opens it before sending
    body = json.dumps({"id": "rid", "verdict": "deny"}).encode()
    assert channel.accept(body, {})[0] == 401  # unsigned
    assert channel.accept(body, signed_headers(SECRET, body)) == (200, "accepted")
    assert slot.decision is not None and slot.decision.verdict == "deny"
    assert channel.accept(body, signed_headers(SECRET, body)) == (409, "refused: replayed")
    assert [r.why for r in channel.refused] == ["unsigned", "replayed"]


async def test_no_answer_in_time_follows_the_fallback_and_a_late_answer_is_refused(http_server: HttpServer) -> None:
    portal = Portal(http_server, "late")
    channel = WebhookChannel(portal.hook, SECRET, poll_url=portal.poll, poll_interval=0.05)
    broker = ApprovalBroker(channel, timeout=1, fallback="deny", batch_window=0)
    answer = await broker.decide(request("git push"), NullSink())
    assert answer.decision.verdict == "deny" and answer.how.startswith("timeout")
    late = json.dumps({"id": portal.received[0].json()["id"], "verdict": "allow_once"}).encode()
    assert channel.accept(late, signed_headers(SECRET, late)) == (409, "refused: late")
