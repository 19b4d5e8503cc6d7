"""The processes ``benchmarks/tasks.py`` starts: the scripted model server and the bare DBOS worker.

``python -m benchmarks._durable_peers llm`` serves the Anthropic wire protocol on loopback and prints its URL: a
task's first turn calls ``read_files`` on ``README.md``, its second answers (one turn when the prompt says
``answer:``). ``python -m benchmarks._durable_peers dbos SYSTEM_URL LLM_URL CONCURRENCY`` is the peer: a DBOS
worker whose workflow makes the same two model requests as two steps, on a queue set up as toolrig's.
Each process prints ``READY`` once it takes work.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any

QUEUE = "bench_tasks"
# The model request the peer's steps send: a short prompt, no tools (the work toolrig adds is what is measured).
_BODY = {"model": "claude-bench", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def _answer(body: dict[str, Any]) -> Any:
    from tests.support.fake_llm import Call, Text, reply

    first = body["messages"][0]["content"]
    first = first if isinstance(first, str) else json.dumps(first)
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turns == 0 and "answer:" not in first and body.get("tools"):
        return reply(Call(f"c-{len(first)}", "read_files", json.dumps({"paths": ["README.md"]})))
    return reply(Text("done"))


def serve_llm() -> None:
    from tests.support.fake_llm import FakeLLM

    llm = FakeLLM(responder=_answer).start()  # type: ignore[arg-type]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("READY", llm.anthropic_url, flush=True)
    while not stop.wait(5):
        llm.reset()  # the server keeps every request body: let go of them
    llm.stop()


def bare_dbos(system_url: str, llm_url: str, concurrency: int) -> None:
    import httpx2
    from dbos import DBOS, DBOSConfig

    client = httpx2.Client(base_url=llm_url, timeout=20)

    @DBOS.step()
    def model_turn(turn: int) -> str:
        with client.stream("POST", "/v1/messages", json=_BODY, headers={"x-api-key": "bench"}) as response:
            return f"{turn}:{len(response.read())}"

    @DBOS.workflow(name="bare_task")
    def bare_task(n: int) -> str:
        return model_turn(1) + model_turn(2)

    config: DBOSConfig = {"name": "bench", "system_database_url": system_url, "log_level": "WARNING"}
    DBOS(config=config)
    DBOS.launch()
    DBOS.register_queue(QUEUE, worker_concurrency=concurrency, polling_interval_sec=0.2, on_conflict="always_update")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("READY", flush=True)
    stop.wait()
    DBOS.destroy(workflow_completion_timeout_sec=5)


if __name__ == "__main__":
    if sys.argv[1] == "llm":
        serve_llm()
    else:
        bare_dbos(sys.argv[2], sys.argv[3], int(sys.argv[4]))
