from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.state_servers import BaseXServer
from toolrig.rig import Rig
from toolrig.stores.librarian.basex import BaseXLibrarian


@pytest.fixture(params=["embedded", "basex"])
def lib_rig(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Rig]:
    if request.param == "basex":
        server: BaseXServer = request.getfixturevalue("basex_server")
        cleaner = BaseXLibrarian(server.url, "admin", server.password)
        cleaner.drop_all()
        cleaner.close()
        config = {"stores": {"librarian": server.config()}}
    else:
        config = {}
    with Rig(workspace, config=config) as opened:
        yield opened


def test_librarian_tools_store_get_query_and_search(lib_rig: Rig) -> None:
    stored = lib_rig.call_sync(
        "librarian_store",
        {"collection": "laws", "document_name": "a1.xml", "content": '<law n="1"><title>Harbour dues</title></law>'},
    )
    assert stored.output == {"path": "laws/a1.xml", "bytes": 44, "replaced": False}
    got = lib_rig.call_sync("librarian_get", {"path": "laws/a1.xml"})
    assert got.output == {"path": "laws/a1.xml", "content": '<law n="1"><title>Harbour dues</title></law>'}
    queried = lib_rig.call_sync(
        "librarian_query",
        {
            "query": "declare variable $n external; collection()/law[@n = $n]/title/string()",
            "collection": "laws",
            "variables": {"n": "1"},
        },
    )
    assert queried.output == {"results": ["Harbour dues"], "count": 1}
    found = lib_rig.call_sync("librarian_search", {"query": "harbour"})
    assert found.output is not None and [r["path"] for r in found.output["results"]] == ["laws/a1.xml"]


def test_librarian_store_of_malformed_xml_names_line_and_column(lib_rig: Rig) -> None:
    result = lib_rig.call_sync(
        "librarian_store", {"collection": "c", "document_name": "d.xml", "content": "<a>\n<b></a>"}
    )
    assert result.error_type == "invalid_input"
    assert "line 2, column 6" in (result.message or "")


@pytest.mark.parametrize("name", ["../x.xml", "a/b.xml", ".hidden", "", "x" * 200])
def test_librarian_store_refuses_document_names_that_could_become_other_paths(lib_rig: Rig, name: str) -> None:
    result = lib_rig.call_sync("librarian_store", {"collection": "c", "document_name": name, "content": "<a/>"})
    assert result.error_type == "invalid_input"


def test_librarian_store_refuses_a_doctype_that_pulls_in_a_local_file(lib_rig: Rig) -> None:
    content = '<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>'
    result = lib_rig.call_sync("librarian_store", {"collection": "c", "document_name": "d.xml", "content": content})
    assert result.error_type == "denied"


def test_librarian_tools_speak_the_exist_db_contract(lib_rig: Rig) -> None:
    conversation = (
        '<conversation><message from="greeter">Hello</message><message from="user">Hi</message></conversation>'
    )
    stored = lib_rig.call_sync(
        "librarian_store",
        {"collection": "/db/agents/greeter", "document_name": "conversation-001.xml", "content": conversation},
    )
    assert stored.output is not None and stored.output["path"] == "/db/agents/greeter/conversation-001.xml"
    got = lib_rig.call_sync("librarian_get", {"path": "/db/agents/greeter/conversation-001.xml"})
    assert got.output == {"path": "/db/agents/greeter/conversation-001.xml", "content": conversation}
    for collection in ("/db/agents/greeter", None):
        args: dict[str, object] = {"query": '//message[@from="greeter"]'}
        if collection:
            args["collection"] = collection
        queried = lib_rig.call_sync("librarian_query", args)
        assert queried.output == {"results": ['<message from="greeter">Hello</message>'], "count": 1}
    bound = lib_rig.call_sync(
        "librarian_query", {"query": "//message[@from = $who]/string()", "variables": {"who": "user"}}
    )
    assert bound.output == {"results": ["Hi"], "count": 1}
    absent = lib_rig.call_sync("librarian_query", {"query": "//message", "collection": "/db/agents/nobody"})
    assert absent.is_error and absent.error_type == "not_found"
