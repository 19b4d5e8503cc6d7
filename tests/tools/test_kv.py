from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.state_servers import RedisServer
from toolrig.rig import Rig


@pytest.fixture(params=["sqlite", "redis"])
def kv_rig(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Rig]:
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        import redis

        client = redis.Redis.from_url(server.url)
        client.flushdb()
        client.close()
        config: dict[str, object] = {"stores": {"kv": {"backend": "redis", "url": server.url}}}
    else:
        config = {}
    with Rig(workspace, config=config) as opened:
        yield opened


def test_key_value_tools_store_read_and_delete_json(kv_rig: Rig) -> None:
    stored = kv_rig.call_sync("key_value_set", {"key": "plan", "value": {"step": 3, "done": ["a"]}, "ttl": 60})
    assert stored.output == {"namespace": "default", "key": "plan", "expires_in_seconds": 60.0}
    assert kv_rig.call_sync("key_value_get", {"key": "plan"}).output == {
        "found": True,
        "value": {"step": 3, "done": ["a"]},
    }
    assert kv_rig.call_sync("key_value_delete", {"key": "plan"}).output == {"deleted": True}
    assert kv_rig.call_sync("key_value_get", {"key": "plan"}).output == {"found": False, "value": None}


def test_key_value_namespace_defaults_to_the_calling_agents_id(kv_rig: Rig) -> None:
    kv_rig.call_sync("key_value_set", {"key": "k", "value": "alpha's"}, agent_id="alpha")
    kv_rig.call_sync("key_value_set", {"key": "k", "value": "beta's"}, agent_id="beta")
    assert kv_rig.call_sync("key_value_get", {"key": "k"}, agent_id="alpha").output == {
        "found": True,
        "value": "alpha's",
    }
    assert kv_rig.call_sync("key_value_get", {"key": "k"}).output == {"found": False, "value": None}
    shared = kv_rig.call_sync("key_value_get", {"key": "k", "namespace": "beta"}, agent_id="alpha")
    assert shared.output == {"found": True, "value": "beta's"}


def test_key_value_set_over_the_configured_size_limit_is_too_large(workspace: Path) -> None:
    with Rig(workspace, config={"stores": {"kv": {"max_value_bytes": 10}}}) as rig:
        result = rig.call_sync("key_value_set", {"key": "k", "value": "x" * 20})
    assert result.error_type == "too_large"
    assert "22" in (result.message or "")
