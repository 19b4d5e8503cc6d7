"""A stdio MCP server (standard library only) whose ``say`` tool answers with as long a line as asked, framed as asked.

``say(size, shape)``: ``id_first`` writes the answer as the Python SDK does (``{"jsonrpc", "id", "result"}``),
``id_last`` as the TypeScript SDK does (``{"result", "jsonrpc", "id"}``), ``no_id`` as a broken server might (its
id past both ends the client keeps), ``notice`` sends a notification that long first and then a short answer,
``garbage`` a line that long that is no JSON and then a short answer, ``deep`` a notification nested too deep to
read in its head, then a short answer, ``ask`` a request that long to the client (``roots/list``) and then answers
with what the client answered. ``size`` is the length of the text in the long line.

``--stubborn PIDFILE``: ignores SIGTERM, stays after its stdin ends, and starts a child that does the same; both
pids go to PIDFILE. Only SIGKILL to its process group ends them. ``--stubborn-child PIDFILE``: the same, but the
server itself ends on SIGTERM (the child does not).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

TOOL = {
    "name": "say",
    "description": "Answer with size characters.",
    "inputSchema": {
        "type": "object",
        "properties": {"size": {"type": "integer"}, "shape": {"type": "string"}},
        "required": ["size", "shape"],
    },
}


def write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def answer(request_id: object, result: dict[str, object]) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))


def call(request_id: object, size: int, shape: str) -> None:
    text = "x" * size
    content = {"content": [{"type": "text", "text": text}]}
    if shape == "id_first":
        answer(request_id, content)
    elif shape == "id_last":
        write(json.dumps({"result": content, "jsonrpc": "2.0", "id": request_id}))
    elif shape == "no_id":
        write(json.dumps({"jsonrpc": "2.0", "result": content, "id": request_id, "meta": {"pad": text}}))
    elif shape == "notice":
        write(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": text}})
        )
        answer(request_id, {"content": [{"type": "text", "text": "after the notice"}]})
    elif shape == "garbage":
        write(text)
        answer(request_id, {"content": [{"type": "text", "text": "the real answer"}]})
    elif shape == "deep":
        data = "[" * 5000 + "1" + "]" * 5000
        write(
            '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": ' + data + f', "x": "{text}"}}}}'
        )
        answer(request_id, {"content": [{"type": "text", "text": "the real answer"}]})
    elif shape == "ask":
        write(json.dumps({"jsonrpc": "2.0", "id": "big-1", "method": "roots/list", "params": {"pad": text}}))
        for line in sys.stdin:  # the client's answer, before anything else it sends
            reply = json.loads(line)
            if reply.get("id") == "big-1" and "method" not in reply:
                answer(request_id, {"content": [{"type": "text", "text": json.dumps(reply)}]})
                return


def stubborn(pidfile: str, itself: bool) -> None:
    if itself:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    with open(pidfile, "w") as handle:
        handle.write(f"{os.getpid()} {child.pid}\n")


def main() -> None:
    for flag in ("--stubborn", "--stubborn-child"):
        if flag in sys.argv:
            stubborn(sys.argv[sys.argv.index(flag) + 1], itself=flag == "--stubborn")
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            answer(request_id, {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "long-line", "version": "1"},
            })  # fmt: skip
        elif method == "tools/list":
            answer(request_id, {"tools": [TOOL]})
        elif method == "tools/call":
            arguments = message["params"]["arguments"]
            call(request_id, int(arguments["size"]), str(arguments["shape"]))
        elif request_id is not None:
            answer(request_id, {})
    if "--stubborn" in sys.argv or "--stubborn-child" in sys.argv:
        time.sleep(600)


if __name__ == "__main__":
    main()
