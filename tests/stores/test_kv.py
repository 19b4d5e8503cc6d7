from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.kv import KeyValueStore, Limits, RedisKeyValueStore, SqliteKeyValueStore

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=50),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=json_values, key=st.text(min_size=1, max_size=40).filter(lambda k: "\x00" not in k))
def test_kv_returns_exactly_the_json_value_that_was_set(kv: KeyValueStore, value: object, key: str) -> None:
    kv.set("ns", key, value)
    assert kv.get("ns", key) == (True, value)


def test_kv_get_of_a_missing_key_is_not_found_rather_than_an_error(kv: KeyValueStore) -> None:
    assert kv.get("ns", "missing") == (False, None)


def test_kv_set_replaces_the_previous_value(kv: KeyValueStore) -> None:
    kv.set("ns", "k", 1)
    kv.set("ns", "k", {"v": 2})
    assert kv.get("ns", "k") == (True, {"v": 2})


def test_kv_namespaces_keep_equal_keys_apart(kv: KeyValueStore) -> None:
    kv.set("alice", "k", "a")
    kv.set("bob", "k", "b")
    assert kv.get("alice", "k") == (True, "a")
    assert kv.get("bob", "k") == (True, "b")


def test_kv_delete_reports_whether_something_was_deleted(kv: KeyValueStore) -> None:
    kv.set("ns", "k", True)
    assert kv.delete("ns", "k") is True
    assert kv.delete("ns", "k") is False
    assert kv.get("ns", "k") == (False, None)


def test_kv_value_expires_after_its_ttl(kv: KeyValueStore) -> None:
    kv.set("ns", "short", "gone soon", ttl=0.01)
    kv.set("ns", "long", "stays", ttl=3600)
    deadline = time.monotonic() + 10
    while kv.get("ns", "short")[0]:  # expiry is the store's clock; poll it, bounded
        assert time.monotonic() < deadline, "the value did not expire"
    assert kv.get("ns", "long") == (True, "stays")
    assert kv.delete("ns", "short") is False


def test_kv_refuses_a_value_over_the_size_limit_with_the_sizes(kv: KeyValueStore) -> None:
    kv.limits = Limits(max_value_bytes=100)  # type: ignore[attr-defined]
    with pytest.raises(ToolError) as caught:
        kv.set("ns", "big", "x" * 200)
    assert caught.value.error_type is ErrorType.TOO_LARGE
    assert "202" in caught.value.message and "100" in caught.value.message
    assert kv.get("ns", "big") == (False, None)


@pytest.mark.parametrize("namespace", ["", "has space", "a:b", "x" * 129, "slash/y"])
def test_kv_refuses_a_malformed_namespace(kv: KeyValueStore, namespace: str) -> None:
    with pytest.raises(ToolError) as caught:
        kv.set(namespace, "k", 1)
    assert caught.value.error_type is ErrorType.INVALID_INPUT


@pytest.mark.parametrize("key", ["", "k" * 513, "nul\x00byte"])
def test_kv_refuses_an_empty_overlong_or_nul_key(kv: KeyValueStore, key: str) -> None:
    with pytest.raises(ToolError) as caught:
        kv.set("ns", key, 1)
    assert caught.value.error_type is ErrorType.INVALID_INPUT


@pytest.mark.parametrize("ttl", [0, -1, 10**10])
def test_kv_refuses_a_ttl_out_of_range(kv: KeyValueStore, ttl: float) -> None:
    with pytest.raises(ToolError) as caught:
        kv.set("ns", "k", 1, ttl=ttl)
    assert caught.value.error_type is ErrorType.INVALID_INPUT


def test_kv_refuses_a_value_that_is_not_plain_json(kv: KeyValueStore) -> None:
    with pytest.raises(ToolError) as caught:
        kv.set("ns", "k", float("nan"))
    assert caught.value.error_type is ErrorType.INVALID_INPUT


def test_sqlite_kv_keeps_values_across_reopening(tmp_path) -> None:  # type: ignore[no-untyped-def]
    first = SqliteKeyValueStore(tmp_path / "kv.sqlite")
    first.set("ns", "k", [1, 2, 3])
    first.close()
    again = SqliteKeyValueStore(tmp_path / "kv.sqlite")
    assert again.get("ns", "k") == (True, [1, 2, 3])
    again.close()


def test_redis_kv_reports_an_unreachable_server_as_unavailable() -> None:
    from tests.support.servers import refusing_port

    with refusing_port() as port:
        store = RedisKeyValueStore(f"redis://127.0.0.1:{port}/0")
        with pytest.raises(ToolError) as caught:
            store.get("ns", "k")
    assert caught.value.error_type is ErrorType.UNAVAILABLE
    store.close()
