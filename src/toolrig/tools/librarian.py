"""Librarian tools: store XML documents in collections, fetch them, query them with XQuery 3.1, search their text.

Trust model: everything is the model's: names are checked, documents must be well-formed with no external
entities, and a query that reads outside the library or writes is refused before it runs (stores.librarian).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.stores.librarian import split_path
from toolrig.stores.librarian.names import document_path

MAX_GET_CHARS = 2_000_000


def _spelled(asked: str, canonical: str) -> str:
    """A path as the caller writes them: '/db/agents/greeter/x.xml' for an eXist-db style caller."""
    return f"/db/{canonical}" if asked.strip().startswith("/db") else canonical


def _canonical(path: str) -> str:
    """The document a path names ('/db/a/x.xml' -> 'a/x.xml'); a path the store refuses is kept as sent."""
    found = document_path(path)
    return f"{found[0]}/{found[1]}" if found is not None else path


class LibrarianStoreInput(ToolInput):
    collection: str = Field(
        description=(
            "Collection path: 'contracts', or nested like '/db/agents/greeter' ('/db' is the root, as in eXist-db). "
            "Each name: letters, digits, '_' or '-', starting with a letter."
        )
    )
    document_name: str = Field(description="Document name within the collection, e.g. 'lease-2024.xml'.")
    content: str = Field(description="The whole XML document; it must be well-formed.")


class LibrarianStoreOutput(ToolOutput):
    path: str = Field(description="The document's path, 'collection/document_name' ('/db/...' if you gave one).")
    bytes: int
    replaced: bool = Field(description="True when a document of that name was replaced.")


class LibrarianStore(Tool[LibrarianStoreInput, LibrarianStoreOutput]):
    name = "librarian_store"
    group = "librarian"
    description = (
        "Store an XML document in a collection (the collection is created when needed; a document with the "
        "same name is replaced). The XML must be well-formed: errors name the line and column. DOCTYPEs with "
        "external files or entity declarations are refused."
    )

    def execute(self, input: LibrarianStoreInput, ctx: ToolContext) -> LibrarianStoreOutput:
        stored = ctx.stores.librarian.store(input.collection, input.document_name, input.content)
        return LibrarianStoreOutput(
            path=_spelled(input.collection, stored.path), bytes=stored.bytes, replaced=stored.replaced
        )

    def subjects(self, input: LibrarianStoreInput) -> list[str]:
        # One document path, as stored ('/db/a', 'db/a' and ' a' are the collection 'a'): what a rule must see.
        return [_canonical(f"{input.collection.strip().rstrip('/')}/{input.document_name}")]


class LibrarianGetInput(ToolInput):
    path: Annotated[str, Subject("text")] = Field(
        description=(
            "'collection/document_name', as librarian_store or librarian_search gave it, or an eXist-db path "
            "such as '/db/agents/greeter/conversation-001.xml'."
        )
    )


class LibrarianGetOutput(ToolOutput):
    path: str
    content: str = Field(description="The XML document.")


class LibrarianGet(Tool[LibrarianGetInput, LibrarianGetOutput]):
    name = "librarian_get"
    group = "librarian"
    read_only = True
    description = (
        "Fetch a stored XML document whole by its path 'collection/document_name' "
        "(or '/db/agents/greeter/conversation-001.xml')."
    )

    def subjects(self, input: LibrarianGetInput) -> list[str]:
        return [_canonical(input.path)]

    def execute(self, input: LibrarianGetInput, ctx: ToolContext) -> LibrarianGetOutput:
        collection, name = split_path(input.path)
        content = ctx.stores.librarian.get(f"{collection}/{name}")
        return LibrarianGetOutput(path=_spelled(input.path, f"{collection}/{name}"), content=content)


class LibrarianQueryInput(ToolInput):
    query: Annotated[str, Subject("text")] = Field(
        description=(
            "An XQuery 3.1 main module. Its context is the chosen collection's documents (all documents when "
            "none is chosen), so '//message[@from=\"greeter\"]' searches them; collection() reads the same, "
            "collection('name') or collection('/db/a/b') another (with its sub-collections), "
            "doc('collection/document') one document. Use $name for each value passed in variables "
            "(declaring it 'external' is optional)."
        )
    )
    collection: str | None = Field(
        default=None,
        description="The collection the query reads by default, e.g. '/db/agents/greeter'; omit (or '/db') for all.",
    )
    variables: dict[str, Any] = Field(
        default_factory=dict, description="Values for external variables: strings, numbers or booleans by name."
    )


class LibrarianQueryOutput(ToolOutput):
    results: list[str] = Field(description="The result sequence: nodes serialized as XML, other values as text.")
    count: int


class LibrarianQuery(Tool[LibrarianQueryInput, LibrarianQueryOutput]):
    name = "librarian_query"
    group = "librarian"
    read_only = True
    description = (
        "Run a read-only XQuery 3.1 query over stored documents, e.g. "
        "\"for $b in collection('books')//book where $b/@year > 2000 return $b/title/string()\". "
        "Only standard functions (fn:, math:, map:, array:, xs:) and your own local: functions are allowed; "
        "file, network, module imports and updates are refused, and a query that runs too long is stopped."
    )

    def execute(self, input: LibrarianQueryInput, ctx: ToolContext) -> LibrarianQueryOutput:
        results = ctx.stores.librarian.query(input.query, input.collection, input.variables)
        return LibrarianQueryOutput(results=results, count=len(results))


class LibrarianSearchInput(ToolInput):
    query: Annotated[str, Subject("text")] = Field(
        description='Words to find in the documents\' text; "quoted phrases" match exactly.'
    )
    collection: str | None = Field(
        default=None, description="Search only this collection and those below it; omit for all."
    )
    num_results: int = Field(default=10, ge=1, le=100, description="How many documents to return.")


class LibrarianHit(ToolOutput):
    path: str
    score: float = Field(description="Relevance; higher is better (comparable within one search only).")
    snippet: str


class LibrarianSearchOutput(ToolOutput):
    results: list[LibrarianHit]


class LibrarianSearch(Tool[LibrarianSearchInput, LibrarianSearchOutput]):
    name = "librarian_search"
    group = "librarian"
    read_only = True
    description = (
        "Full-text search over the text of stored XML documents, best matches first, with a snippet of each. "
        "Use it to find which documents to fetch (librarian_get) or query (librarian_query)."
    )

    def execute(self, input: LibrarianSearchInput, ctx: ToolContext) -> LibrarianSearchOutput:
        hits = ctx.stores.librarian.search(input.query, input.collection, input.num_results)
        return LibrarianSearchOutput(
            results=[LibrarianHit(path=h.path, score=h.score, snippet=h.snippet) for h in hits]
        )


TOOLS = [LibrarianStore(), LibrarianGet(), LibrarianQuery(), LibrarianSearch()]
