"""The review's calculator repros (r05 frozen process, r13 unserialisable integers, r20 cross-client freeze)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from tests.adapters.test_mcp_http import client, http_server
from tests.support.cpu_cost import cpu_spent
from toolrig.rig import Rig


def test_r05_round_with_a_huge_negative_digit_count_is_refused_before_it_runs(workspace: Path) -> None:
    rig = Rig(workspace, config={"limits": {"timeout_seconds": 2}})
    # CPU of this whole process, every thread included: not a wall clock
    with cpu_spent(time.process_time) as spent:
        result = rig.call_sync("calculate", {"expression": "round(1, -10**7)"})
    assert result.is_error and result.error_type == "invalid_input", result
    assert "round" in (result.message or "")
    assert spent() < 1.0


@pytest.mark.parametrize("expression", ["-(1<<99999<<99999<<99999<<99999)", "2**99999", "2**14300"])
def test_r13_integers_past_the_text_conversion_limit_are_refused_and_the_result_serialises(
    rig: Rig, expression: str
) -> None:
    result = rig.call_sync("calculate", {"expression": expression})
    assert result.is_error and result.error_type == "invalid_input", result
    assert json.loads(result.to_json())["is_error"] is True


@pytest.mark.anyio
async def test_r20_another_mcp_clients_arithmetic_answers_while_a_costly_expression_is_refused(
    workspace: Path, toolrig_home: Path
) -> None:
    costly: list[bool] = []
    cheap: list[object] = []
    with http_server(workspace, toolrig_home) as url:
        async with client(url) as attacker, client(url) as other:
            done = anyio.Event()

            async def attack() -> None:
                while not done.is_set():
                    result = await attacker.call_tool("calculate", {"expression": "round(1, -10**8)"})
                    costly.append(bool(result.is_error))

            async with anyio.create_task_group() as group:
                group.start_soon(attack)
                for _ in range(10):
                    result = await other.call_tool("calculate", {"expression": "1+1"})
                    cheap.append((result.structured_content or {}).get("result"))
                done.set()
    assert cheap == [2] * 10
    assert costly and all(costly)
