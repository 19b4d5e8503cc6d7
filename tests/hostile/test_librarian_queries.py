"""Hostile XQuery, on both backends: reading outside the library, writing, or reaching other code is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian import Librarian

HOSTILE = [
    "doc('file:///etc/passwd')",
    "fn:doc('/etc/passwd')",
    "doc('books/../../../etc/passwd')",
    "doc(: hidden :)('file:///etc/passwd')",
    "let $p := '/etc/passwd' return doc($p)",
    "unparsed-text('/etc/passwd')",
    "fn:unparsed-text-lines('file:///etc/passwd')",
    "unparsed-text#1('/etc/passwd')",
    "'/etc/passwd' => unparsed-text()",
    "unparsed-text-available('/etc/passwd')",
    "collection('file:///etc?select=*')",
    "collection('/etc')",
    "declare variable $c external; collection($c)",
    "json-doc('/etc/x.json')",
    "environment-variable('HOME')",
    "available-environment-variables()",
    "Q{http://expath.org/ns/file}read-text('/etc/passwd')",
    "file:read-text('/etc/passwd')",
    "declare namespace f = 'http://expath.org/ns/file'; f:read-text('/etc/passwd')",
    "declare default function namespace 'http://expath.org/ns/file'; read-text('/etc/passwd')",
    "import module namespace m = 'urn:m' at 'file:///tmp/evil.xqm'; 1",
    "import schema 'urn:s' at 'file:///etc/passwd'; 1",
    "declare option db:chop 'false'; 1",
    "(# basex:non-deterministic #) { 1 }",
    "insert node <hacked/> into doc('books/moby.xml')/book",
    "delete node doc('books/moby.xml')//title",
    "replace value of node doc('books/moby.xml')//title with 'x'",
    "rename node doc('books/moby.xml')/book as 'x'",
    "copy $c := doc('books/moby.xml') modify delete node $c//title return $c",
    "declare updating function local:f() { () }; 1",
    "put(<a/>, 'file:///tmp/toolrig-put.xml')",
    "db:create('evil')",
    "db:drop('books')",
    "proc:system('id')",
    "xquery:eval(\"file:read-text('/etc/passwd')\")",
    "fetch:text('http://127.0.0.1:1/')",
    "http:send-request(<http:request method='get' href='http://127.0.0.1:1/'/>)",
    "function-lookup(xs:QName('fn:unparsed-text'), 1)('/etc/passwd')",
    "<a b=\"{unparsed-text('/etc/passwd')}\"/>",
    "<a>it's</a>, doc('file:///etc/passwd'), <b>'</b>",
    "transform(map { 'stylesheet-location': 'file:///tmp/x.xsl' })",
    "load-xquery-module('urn:x')",
    "parse-xml('<!DOCTYPE a SYSTEM \"file:///etc/passwd\"><a/>')",
    "module namespace m = 'urn:m'; declare function m:f() { 1 };",
    "declare namespace fn = 'http://expath.org/ns/file'; fn:read-text('/etc/passwd')",
    "declare namespace local = 'http://basex.org/modules/proc'; local:system('id')",
    "<a xmlns:fn='http://expath.org/ns/file'>{ fn:read-text('/etc/passwd') }</a>",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_librarian_query_refuses_reading_outside_the_library_or_writing(librarian: Librarian, query: str) -> None:
    librarian.store("books", "moby.xml", "<book><title>Moby Dick</title></book>")
    with pytest.raises(ToolError) as caught:
        librarian.query(query, None, {})
    assert caught.value.error_type is ErrorType.DENIED, caught.value.message
    assert librarian.get("books/moby.xml") == "<book><title>Moby Dick</title></book>"


@pytest.mark.parametrize(
    "query",
    [
        "declare function local:twice($x) { $x * 2 }; local:twice(21)",
        "for $t in collection('books')//title return fn:upper-case($t)",
        "map:keys(map { 'a': 1 }), array:size([1, 2]), math:sqrt(16)",
        "let $d := doc('books/moby.xml') return $d instance of document-node()",
    ],
)
def test_librarian_query_allows_the_standard_library_and_local_functions(librarian: Librarian, query: str) -> None:
    librarian.store("books", "moby.xml", "<book><title>Moby Dick</title></book>")
    assert librarian.query(query, None, {})


def test_collation_uris_resolve_in_memory_and_an_unknown_one_is_refused_never_fetched(workspace: Path) -> None:
    import socket

    from tests.support.file_helpers import Caller

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    port = listener.getsockname()[1]
    call = Caller(workspace)
    call.ok("librarian_store", collection="c", document_name="d.xml", content="<a>B</a>")
    query = 'compare("b", string(collection("c")//a), "{}")'
    known = "http://www.w3.org/2013/collation/UCA?lang=de;strength=primary"
    assert call.ok("librarian_query", query=query.format(known))["results"] == ["0"]
    for uri in (f"http://127.0.0.1:{port}/collation", "file:///etc/passwd", "jar:file:/x!/y"):
        assert "FOCH0002" in call.error("librarian_query", "invalid_input", query=query.format(uri))
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing ever connected
    listener.close()
    call.rig.close()
