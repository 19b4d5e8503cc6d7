"""One suite, two backends: embedded (files, Saxon, FTS5) and a real BaseX server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.state_servers import make_librarian
from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian import Librarian

BOOKS = {
    "moby.xml": "<book year='1851'><title>Moby Dick</title><p>Call me Ishmael. The white whale swims.</p></book>",
    "pride.xml": (
        "<book year='1813'><title>Pride and Prejudice</title><p>It is a truth universally acknowledged.</p></book>"
    ),
    "dune.xml": "<book year='1965'><title>Dune</title><p>The spice must flow. A whale of a desert.</p></book>",
}


def shelve(librarian: Librarian) -> None:
    for name, content in BOOKS.items():
        librarian.store("books", name, content)
    librarian.store("papers", "bm25.xml", "<paper year='1994'><title>Okapi at TREC-3</title></paper>")


def test_librarian_gives_back_the_document_it_stored(librarian: Librarian) -> None:
    stored = librarian.store("books", "moby.xml", BOOKS["moby.xml"])
    assert (stored.path, stored.replaced) == ("books/moby.xml", False)
    assert "Ishmael" in librarian.get("books/moby.xml")
    assert librarian.store("books", "moby.xml", "<book><title>Moby Dick, 2nd ed.</title></book>").replaced is True
    assert "2nd ed." in librarian.get("books/moby.xml")


def test_librarian_get_of_a_missing_document_is_not_found(librarian: Librarian) -> None:
    shelve(librarian)
    for path in ("books/absent.xml", "nowhere/absent.xml"):
        with pytest.raises(ToolError) as caught:
            librarian.get(path)
        assert caught.value.error_type is ErrorType.NOT_FOUND


def test_librarian_refuses_malformed_xml_naming_line_and_column(librarian: Librarian) -> None:
    with pytest.raises(ToolError) as caught:
        librarian.store("books", "bad.xml", "<book>\n  <title>Unclosed</book>")
    assert caught.value.error_type is ErrorType.INVALID_INPUT
    assert "line 2, column 20" in caught.value.message
    with pytest.raises(ToolError):
        librarian.get("books/bad.xml")


def test_librarian_query_binds_external_variables_by_name(librarian: Librarian) -> None:
    shelve(librarian)
    items = librarian.query(
        "declare variable $after external; declare variable $label external;\n"
        "for $b in collection('books')/book where xs:integer($b/@year) > $after "
        "order by $b/title return $label || ': ' || $b/title",
        None,
        {"after": 1900, "label": "modern"},
    )
    assert items == ["modern: Dune"]


def test_librarian_query_collection_without_a_name_reads_the_chosen_collection_or_all(librarian: Librarian) -> None:
    shelve(librarian)
    assert librarian.query("count(collection())", "books", {}) == ["3"]
    assert librarian.query("count(collection())", "papers", {}) == ["1"]
    assert librarian.query("count(collection())", None, {}) == ["4"]


def test_librarian_query_reads_one_document_with_doc_and_serialises_nodes_as_xml(librarian: Librarian) -> None:
    shelve(librarian)
    assert librarian.query("doc('books/dune.xml')/book/title", None, {}) == ["<title>Dune</title>"]
    assert librarian.query("xquery version '3.1'; declare namespace x = 'urn:x'; 1 + 1, true()", None, {}) == [
        "2",
        "true",
    ]


def test_librarian_query_of_an_unknown_collection_is_not_found(librarian: Librarian) -> None:
    shelve(librarian)
    with pytest.raises(ToolError) as caught:
        librarian.query("collection('missing')", None, {})
    assert caught.value.error_type is ErrorType.NOT_FOUND


def test_librarian_query_syntax_error_is_invalid_input_with_the_engine_message(librarian: Librarian) -> None:
    with pytest.raises(ToolError) as caught:
        librarian.query("1 +", None, {})
    assert caught.value.error_type is ErrorType.INVALID_INPUT
    assert "XPST0003" in caught.value.message


def test_librarian_query_refuses_a_list_as_a_variable(librarian: Librarian) -> None:
    with pytest.raises(ToolError) as caught:
        librarian.query("declare variable $x external; $x", None, {"x": [1, 2]})
    assert caught.value.error_type is ErrorType.INVALID_INPUT
    assert "parse-json" in caught.value.next_action_hint


def test_librarian_search_ranks_documents_with_more_matches_first(librarian: Librarian) -> None:
    shelve(librarian)
    hits = librarian.search("whale spice", None, 10)
    assert [hit.path for hit in hits] == ["books/dune.xml", "books/moby.xml"]
    assert hits[0].score >= hits[1].score
    assert "spice" in hits[0].snippet


def test_librarian_search_matches_a_quoted_phrase_and_stays_in_its_collection(librarian: Librarian) -> None:
    shelve(librarian)
    assert [h.path for h in librarian.search('"truth universally"', "books", 10)] == ["books/pride.xml"]
    assert librarian.search('"universally truth"', "books", 10) == []
    assert librarian.search("whale", "papers", 10) == []
    assert len(librarian.search("whale", None, 1)) == 1


def test_librarian_search_of_punctuation_only_is_invalid_input(librarian: Librarian) -> None:
    with pytest.raises(ToolError) as caught:
        librarian.search('"(*)" -:; ~', None, 5)
    assert caught.value.error_type is ErrorType.INVALID_INPUT


@pytest.mark.parametrize("kind", ["embedded", "basex"])
def test_librarian_stops_a_query_that_overruns_its_timeout_and_keeps_working(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    librarian = make_librarian(kind, request, tmp_path / "lib", timeout=1.0)
    try:
        librarian.store("books", "moby.xml", BOOKS["moby.xml"])
        with pytest.raises(ToolError) as caught:
            librarian.query("sum(for $i in 1 to 100000, $j in 1 to 100000 return ($i * $j) mod 7)", None, {})
        assert caught.value.error_type is ErrorType.TIMEOUT
        assert librarian.query("count(collection('books'))", None, {}) == ["1"]
    finally:
        librarian.close()


# Issue 18 item 3: the seed's eXist-db contract, on both backends.

CONVERSATION = (
    "<conversation><message from='greeter'>Hello</message><message from='user'>Hi</message>"
    "<message from='greeter'>How can I help?</message></conversation>"
)


def converse(librarian: Librarian) -> None:
    librarian.store("/db/agents/greeter", "conversation-001.xml", CONVERSATION)
    librarian.store("/db/agents/critic", "review-001.xml", "<review><message from='critic'>Meh</message></review>")
    librarian.store("books", "moby.xml", BOOKS["moby.xml"])


def test_nested_collections_store_and_get_by_their_exist_db_paths(librarian: Librarian) -> None:
    stored = librarian.store("/db/agents/greeter", "conversation-001.xml", CONVERSATION)
    assert stored.path == "agents/greeter/conversation-001.xml"
    for path in ("/db/agents/greeter/conversation-001.xml", "agents/greeter/conversation-001.xml"):
        assert "How can I help?" in librarian.get(path)
    with pytest.raises(ToolError) as caught:
        librarian.get("/db/agents/conversation-001.xml")
    assert caught.value.error_type is ErrorType.NOT_FOUND


@pytest.mark.parametrize("collection", ["/db/agents/greeter", "agents/greeter", "db/agents/greeter"])
def test_a_querys_context_is_the_collections_documents(librarian: Librarian, collection: str) -> None:
    converse(librarian)
    found = librarian.query('//message[@from="greeter"]/string()', collection, {})
    assert found == ["Hello", "How can I help?"]
    assert librarian.query("count(//message)", collection, {}) == ["3"]


def test_without_a_collection_the_context_is_every_document(librarian: Librarian) -> None:
    converse(librarian)
    assert librarian.query('//message[@from="greeter"]/string()', None, {}) == ["Hello", "How can I help?"]
    assert librarian.query("count(//message)", None, {}) == ["4"]
    assert librarian.query("count(//message)", "/db", {}) == ["4"]


def test_a_parent_collection_reads_its_sub_collections_too(librarian: Librarian) -> None:
    converse(librarian)
    assert librarian.query("count(collection('/db/agents')//message)", None, {}) == ["4"]
    assert librarian.query("count(//message)", "/db/agents", {}) == ["4"]
    assert librarian.query("count(doc('/db/agents/critic/review-001.xml')//message)", None, {}) == ["1"]


def test_variables_bind_without_being_declared(librarian: Librarian) -> None:
    converse(librarian)
    found = librarian.query("//message[@from = $who]/string()", "/db/agents", {"who": "critic"})
    assert found == ["Meh"]
    declared = "declare variable $who external; declare variable $n := 1; //message[@from = $who][$n]/string()"
    assert librarian.query(declared, None, {"who": "greeter"}) == ["Hello"]


def test_a_leading_slash_inside_a_predicate_or_a_constructor_keeps_its_meaning(librarian: Librarian) -> None:
    converse(librarian)
    query = "for $m in collection()//message[count(//message) = 3] return <m>{$m/@from/string()}</m>"
    assert librarian.query(query, "/db/agents/greeter", {}) == ["<m>greeter</m>", "<m>user</m>", "<m>greeter</m>"]


def test_search_in_a_collection_covers_its_sub_collections(librarian: Librarian) -> None:
    converse(librarian)
    hits = librarian.search("help", "/db/agents", 10)
    assert [hit.path for hit in hits] == ["agents/greeter/conversation-001.xml"]
    assert librarian.search("help", "/db/agents/critic", 10) == []


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "/db/../etc/x.xml", "/db/a//b.xml", "agents/greeter/../x.xml", "/db/x.xml"]
)
def test_paths_outside_the_library_or_malformed_are_invalid(librarian: Librarian, path: str) -> None:
    with pytest.raises(ToolError) as caught:
        librarian.get(path)
    assert caught.value.error_type is ErrorType.INVALID_INPUT


def test_a_collection_and_a_document_cannot_share_a_path(librarian: Librarian) -> None:
    librarian.store("a", "b", "<x/>")
    with pytest.raises(ToolError) as caught:
        librarian.store("a/b", "c.xml", "<x/>")
    assert caught.value.error_type is ErrorType.CONFLICT
