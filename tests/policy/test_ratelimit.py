from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Call
from tests.policy.conftest import last_row
from tests.support.governed_tools import catalog
from toolrig.config import AgentConfig, Config, parse_rate
from toolrig.errors import ConfigError
from toolrig.permissions import configured
from toolrig.policy.ratelimit import RateLimiter
from toolrig.rig import Rig


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10/minute", (10, 60.0)),
        ("100/hour", (100, 3600.0)),
        ("5/second", (5, 1.0)),
        ("1000/day", (1000, 86400.0)),
        ("3 / 10m", (3, 600.0)),
        ("1/s", (1, 1.0)),
        ("2/Hours", (2, 3600.0)),
    ],
)
def test_rates_parse(text: str, expected: tuple[int, float]) -> None:
    assert parse_rate(text) == expected


@pytest.mark.parametrize("text", ["10", "ten/minute", "0/minute", "5/fortnight", "5/0m", "-1/hour", "/hour"])
def test_bad_rates_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a rate"):
        parse_rate(text)


def test_a_bad_rate_in_config_names_file_and_line(workspace: Path, toolrig_home: Path) -> None:
    (toolrig_home / "config.yaml").write_text("rate_limits:\n  calculate: 10/minute\n  read_output: often\n")
    with pytest.raises(ConfigError, match=r"config\.yaml:3: rate_limits\.read_output: .*'often' is not a rate"):
        Rig(workspace)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def limiter(tmp_path: Path, clock: Clock, **config: object) -> RateLimiter:
    return RateLimiter(Config.model_validate(config), tmp_path / "state", clock=clock)


def test_a_bucket_empties_then_refills_at_its_rate(tmp_path: Path) -> None:
    clock = Clock()
    limits = limiter(tmp_path, clock, rate_limits={"calculate": "3/minute"})
    tool = catalog().get("calculate")
    wanted = limits.limits_for(tool, None)
    assert [limits.acquire_blocking(wanted) for _ in range(3)] == [None, None, None]
    refusal = limits.acquire_blocking(wanted)
    assert refusal is not None and refusal.wait == pytest.approx(20.0) and refusal.limit.text == "3/minute"
    clock.now += 19.0
    assert limits.acquire_blocking(wanted) is not None
    clock.now += 1.0
    assert limits.acquire_blocking(wanted) is None
    clock.now += 3600  # refills to the burst size, never beyond
    assert [limits.acquire_blocking(wanted) is None for _ in range(4)] == [True, True, True, False]


def test_agents_sharing_buckets_draw_from_the_root_agents_even_two_levels_down(tmp_path: Path) -> None:
    clock = Clock()
    both = {"rate_limit": "3/hour", "rate_limits": {"calc*": "3/hour"}}
    limits = limiter(tmp_path, clock, agents={"lead": both, "kid": both})
    lead = configured("lead", AgentConfig.model_validate(both))
    kid = lead.child("kid", AgentConfig.model_validate(both))
    grandkid = kid.child("grandkid", AgentConfig.model_validate(both))  # a child of a child: the root's buckets
    tool = catalog().get("calculate")
    agents = {"lead": lead, "kid": kid, "grandkid": grandkid}
    keys = {name: [lim.key for lim in limits.limits_for(tool, view)] for name, view in agents.items()}
    assert keys["lead"] == keys["kid"] == keys["grandkid"] == ["agent:lead", "agent:lead:tool:calculate:calc*"]
    order = ("kid", "grandkid", "lead", "kid")
    drawn = [limits.acquire_blocking(limits.limits_for(tool, agents[a])) is None for a in order]
    assert drawn == [True, True, True, False]
    # A configured agent named like a child keeps its own buckets: a label is not a key.
    assert limits.limits_for(tool, "kid")[0].key == "agent:kid"


def test_a_refused_call_takes_no_token_from_any_bucket(tmp_path: Path) -> None:
    clock = Clock()
    limits = limiter(
        tmp_path,
        clock,
        rate_limits={"calculate": "5/hour"},
        agents={"a": {"rate_limit": "1/hour", "rate_limits": {"calc*": "4/hour"}}},
    )
    tool = catalog().get("calculate")
    agent_limits = limits.limits_for(tool, "a")
    assert [lim.source for lim in agent_limits] == [
        "rate_limits.calculate",
        "agents.a.rate_limit",
        "agents.a.rate_limits.calc*",
    ]
    assert limits.acquire_blocking(agent_limits) is None
    refusal = limits.acquire_blocking(agent_limits)
    assert refusal is not None and refusal.limit.source == "agents.a.rate_limit"
    tool_only = limits.limits_for(tool, None)
    assert [limits.acquire_blocking(tool_only) is None for _ in range(5)] == [True, True, True, True, False]


def test_over_the_limit_the_model_gets_rate_limited_with_the_wait(
    consumer: Call, user_config: Callable[[str], Path], workspace: Path
) -> None:
    user_config("rate_limits:\n  calculate: 2/hour\n")
    assert not consumer("calculate", {"expression": "1"})["is_error"]
    assert not consumer("calculate", {"expression": "2"})["is_error"]
    result = consumer("calculate", {"expression": "3"})
    assert result["error_type"] == "rate_limited"
    assert result["message"] == "'calculate' is over its rate limit of 2/hour (rate_limits.calculate)."
    # The bucket refills while the calls run (a CLI start each, seconds under load): the wait is half an hour less that.
    wait = re.fullmatch(r"Wait (\d+) seconds before calling 'calculate' again.*", result["next_action_hint"], re.S)
    assert wait is not None and 1700 <= int(wait[1]) <= 1800, result["next_action_hint"]
    row = last_row(workspace)
    assert (row.decision, row.rule, row.error_type) == ("rate_limited", "rate_limits.calculate", "rate_limited")


def test_a_per_agent_limit_counts_only_that_agents_calls(consumer: Call, user_config: Callable[[str], Path]) -> None:
    user_config("agents:\n  busy:\n    rate_limit: 1/hour\n")
    assert not consumer("calculate", {"expression": "1"}, "busy")["is_error"]
    assert consumer("calculate", {"expression": "1"}, "busy")["error_type"] == "rate_limited"
    assert not consumer("calculate", {"expression": "1"})["is_error"]


WORKER = """
import json, sys
from toolrig import Rig
rig = Rig(sys.argv[1], config={"rate_limits": {"calculate": "6/hour"}, "audit": {"enabled": False}})
print("ready", flush=True)
sys.stdin.readline()  # start together
results = [rig.call_sync("calculate", {"expression": "1"}) for _ in range(6)]
print(json.dumps([r.error_type for r in results]))
"""


def test_limits_hold_across_processes_sharing_a_workspace(workspace: Path) -> None:
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    outcomes = []
    for worker in workers:
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 0
        outcomes.extend(json.loads(out.strip().splitlines()[-1]))
    assert outcomes.count(None) == 6 and outcomes.count("rate_limited") == 6
