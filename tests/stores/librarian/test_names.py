from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.stores.librarian.names import collection_path, document_path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/db/agents/greeter", "agents/greeter"),
        ("db/agents/greeter", "agents/greeter"),
        ("agents/greeter/", "agents/greeter"),
        ("/db", ""),
        ("books", "books"),
        ("/etc", None),
        ("a//b", None),
        ("a/../b", None),
        ("a/.b", None),
        ("/".join("a" * 9), None),
    ],
)
def test_collection_paths_follow_exist_db_with_db_as_the_root(text: str, expected: str | None) -> None:
    assert collection_path(text) == expected


def test_document_paths_split_into_collection_and_name() -> None:
    assert document_path("/db/agents/greeter/conversation-001.xml") == ("agents/greeter", "conversation-001.xml")
    assert document_path("books/moby.xml") == ("books", "moby.xml")
    for bad in ("/db/moby.xml", "moby.xml", "/etc/passwd", "books/../x.xml", "books/a..b", ""):
        assert document_path(bad) is None


@given(st.text(alphabet=st.sampled_from(list("/.db-_aZ9 \\\x00é")), max_size=40))
def test_an_accepted_path_is_plain_names_joined_by_slashes(text: str) -> None:
    for found in (collection_path(text), *(document_path(text) or ())):
        if found:
            assert not found.startswith("/") and "//" not in found and ".." not in found
            assert all(part and part[0] not in "./" and " " not in part for part in found.split("/"))
