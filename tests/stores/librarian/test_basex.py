from __future__ import annotations

import pytest

from tests.support.servers import refusing_port
from tests.support.state_servers import BaseXServer
from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian.basex import _EVAL, BaseXError, BaseXLibrarian, BaseXSession


@pytest.mark.parametrize(
    "query",
    ["file:read-text('/etc/hostname')", "unparsed-text('/etc/hostname')", "doc('/etc/passwd')", "db:create('x')"],
)
def test_basex_server_itself_refuses_file_access_and_writes_even_past_the_guard(
    basex_server: BaseXServer, query: str
) -> None:
    """Defence in depth: the query runs in xquery:eval with read permission, so BaseX refuses on its own."""
    session = BaseXSession("127.0.0.1", basex_server.port, "admin", basex_server.password, 30)
    outer = _EVAL.format(declarations="", bindings="", timeout=5)
    try:
        with pytest.raises(BaseXError, match=r"permission|No updating"):
            session.query(outer, {"query": (query, "xs:string")})
    finally:
        session.close()


def test_basex_librarian_reports_a_wrong_password_as_unavailable(basex_server: BaseXServer) -> None:
    librarian = BaseXLibrarian(basex_server.url, "admin", "not-the-password")
    with pytest.raises(ToolError) as caught:
        librarian.get("books/moby.xml")
    assert caught.value.error_type is ErrorType.UNAVAILABLE
    assert "refused the login" in caught.value.message
    librarian.close()


def test_basex_librarian_reports_an_unreachable_server_as_unavailable() -> None:
    with refusing_port() as port:
        librarian = BaseXLibrarian(f"basex://127.0.0.1:{port}", "admin", "x")
        with pytest.raises(ToolError) as caught:
            librarian.search("anything", None, 5)
    assert caught.value.error_type is ErrorType.UNAVAILABLE
    librarian.close()


def test_basex_librarian_round_trips_text_that_needs_protocol_escaping(basex_server: BaseXServer) -> None:
    librarian = BaseXLibrarian(basex_server.url, "admin", basex_server.password)
    librarian.drop_all()
    content = "<note>ÿ and \u00ff, emoji 🐋, tab\tend</note>"
    librarian.store("notes", "n.xml", content)
    assert librarian.get("notes/n.xml") == content
    librarian.close()
