"""Hostile values for the key-value store and hostile XML for the librarian, on every backend."""

from __future__ import annotations

import pytest

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.kv import KeyValueStore
from toolrig.stores.librarian import Librarian


def test_kv_refuses_a_value_nested_past_the_recursion_limit(kv: KeyValueStore) -> None:
    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(ToolError) as caught:
        kv.set("ns", "deep", value)
    assert caught.value.error_type is ErrorType.INVALID_INPUT


@pytest.mark.parametrize("namespace", ["../other", "ns:toolrig:kv:x", "ns\nx", "*", "ns x"])
def test_kv_namespace_cannot_smuggle_separators_or_globs(kv: KeyValueStore, namespace: str) -> None:
    with pytest.raises(ToolError) as caught:
        kv.set(namespace, "k", 1)
    assert caught.value.error_type is ErrorType.INVALID_INPUT


@pytest.mark.parametrize(
    "content",
    [
        '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><lolz>&lol2;</lolz>',
        '<!DOCTYPE a [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><a>&xxe;</a>',
        '<!DOCTYPE a [<!ENTITY % p SYSTEM "http://127.0.0.1:1/evil.dtd"> %p;]><a/>',
        '<!DOCTYPE a SYSTEM "file:///etc/passwd"><a/>',
        '<!DOCTYPE a PUBLIC "-//X//Y" "http://127.0.0.1:1/x.dtd"><a/>',
    ],
)
def test_librarian_refuses_entities_and_external_doctypes(librarian: Librarian, content: str) -> None:
    with pytest.raises(ToolError) as caught:
        librarian.store("books", "evil.xml", content)
    assert caught.value.error_type is ErrorType.DENIED
    with pytest.raises(ToolError):
        librarian.get("books/evil.xml")


# 'a/b' is a nested collection now (the eXist-db contract, issue 18 item 3); what climbs, is absolute outside
# /db, has an empty segment or is too deep is still no collection.
@pytest.mark.parametrize(
    "collection",
    ["../etc", "a/../b", "/etc", "a//b", "/db/..", "/".join("a" * 9), "", "/db", "1abc", "x" * 65, "books;DROP DB x"],
)
def test_librarian_refuses_collection_names_that_are_paths_or_commands(librarian: Librarian, collection: str) -> None:
    with pytest.raises(ToolError) as caught:
        librarian.store(collection, "d.xml", "<a/>")
    assert caught.value.error_type is ErrorType.INVALID_INPUT
