"""The XQuery guard: refuse a query that could read outside the library or write, before any engine sees it.

Trust model: the query is hostile. A small lexer finds every function call and declaration; calls that
reach files, the network, the environment or other modules are refused, as are updates, imports and
options. ``collection('name')`` and ``doc('collection/name')`` are the only way to documents: they must
name the library's own collections with literal strings, and are rewritten for the backend. The engines
add their own fences (Saxon: no URI protocol allowed; BaseX: read permission), but this is the gate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian.names import COLLECTION_NAME, DOCUMENT_NAME, collection_path, document_path

__all__ = ["COLLECTION_NAME", "DOCUMENT_NAME", "GuardedQuery", "guard", "tokenize"]

# Prefixes whose functions only compute: the standard library and the query's own local: functions.
ALLOWED_PREFIXES = frozenset({"fn", "math", "map", "array", "xs", "local"})
# Standard functions that reach outside the query (files, URIs, environment, other code) or write.
FORBIDDEN_FUNCTIONS = frozenset(
    {
        "doc-available", "uri-collection", "unparsed-text", "unparsed-text-lines", "unparsed-text-available",
        "unparsed-binary", "json-doc", "csv-doc", "html-doc", "environment-variable",
        "available-environment-variables", "transform", "load-xquery-module", "put", "function-lookup",
        "parse-xml", "parse-xml-fragment", "parse-html", "system-property", "schema-type", "xsd-validator",
        "invisible-xml", "collation-available",
    }
)  # fmt: skip
# Anything whose name says it loads or reaches something is refused too, so new engine functions fail closed.
_SUSPICIOUS = re.compile(r"doc|unparsed|collection|environment|binary|load|transform|lookup|schema|validat|http")
# Writes, imports, options and engine switches, found in the raw text and again with comments removed.
_REFUSED_SYNTAX = (
    (re.compile(r"\bimport\s+(module|schema)\b"), "imports a module or schema"),
    (re.compile(r"\bdeclare\s+option\b"), "sets an engine option"),
    (re.compile(r"\bdeclare\s+base-uri\b"), "changes the base URI"),
    (re.compile(r"\bdeclare\s+default\s+function\s+namespace\b"), "changes the default function namespace"),
    (re.compile(r"\bmodule\s+namespace\b"), "is a library module, not a query"),
    # Rebinding a standard prefix would let 'fn:' or 'local:' name another module's functions.
    (re.compile(r"\bdeclare\s+namespace\s+(fn|math|map|array|xs|local)\s*="), "rebinds a standard prefix"),
    (re.compile(r"\bxmlns:(fn|math|map|array|xs|local)\s*="), "rebinds a standard prefix"),
    (re.compile(r"(%\s*|\bdeclare\s+)updating\b"), "declares an updating function"),
    (re.compile(r"\b(insert|delete)\s+nodes?\b"), "updates nodes"),
    (re.compile(r"\breplace\s+(value\s+of\s+)?node\b"), "updates nodes"),
    (re.compile(r"\brename\s+node\b"), "updates nodes"),
)

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment_open>\(:)
  | (?P<pragma>\(\#)
  | (?P<string>"(?:[^"]|"")*"|'(?:[^']|'')*')
  | (?P<eqname>Q\s*\{[^}]*\}[\w.-]*)
  | (?P<name>[^\W\d][\w.-]*(?::[^\W\d][\w.-]*)?)
  | (?P<number>\d[\w.]*)
  | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_CALL_IN_TEXT = re.compile(r"((?:[^\W\d][\w.-]*:)?[^\W\d][\w.-]*)\s*[(#]")


@dataclass(slots=True)
class Token:
    kind: str
    text: str
    start: int
    end: int


@dataclass
class GuardedQuery:
    """A query that passed the guard: its text with document access rewritten, and what it reads."""

    text: str
    collections: set[str] = field(default_factory=set)
    documents: set[tuple[str, str]] = field(default_factory=set)
    # Where the prolog's setters, imports and namespace declarations end in ``text``: variable declarations the
    # backend adds go here, before any declaration of the query's own that might use them.
    prolog_end: int = 0
    declared: set[str] = field(default_factory=set)  # variables the query declares itself

    def with_declarations(self, declarations: list[str]) -> str:
        if not declarations:
            return self.text
        insert = " ".join(declarations)
        before = self.text[: self.prolog_end]
        return f"{before}{' ' if before else ''}{insert} {self.text[self.prolog_end :].lstrip()}"

    def externals(self, names: list[str]) -> list[str]:
        """Declarations for the variables passed in that the query uses without declaring (as eXist-db binds them).

        The names were checked (``check_variables``): letters, digits, '_', '-' and '.', so they are inlined.
        """
        return [f"declare variable ${name} external;" for name in names if name not in self.declared]


def _refuse(reason: str, hint: str | None = None) -> ToolError:
    return ToolError(
        ErrorType.DENIED,
        f"The query was refused: it {reason}.",
        hint or "Read documents only with collection('name') or doc('collection/document'); queries cannot write.",
    )


def tokenize(query: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    length = len(query)
    while position < length:
        match = _TOKEN.match(query, position)
        if match is None:  # pragma: no cover - the last alternative matches any character
            break
        kind = match.lastgroup or "punct"
        if kind == "comment_open":
            position = _skip_comment(query, position)
            continue
        if kind == "pragma":
            raise _refuse("uses an extension pragma '(# ... #)'")
        if kind != "ws":
            tokens.append(Token(kind, match.group(), match.start(), match.end()))
        position = match.end()
    return tokens


def _skip_comment(query: str, position: int) -> int:
    depth = 0
    while position < len(query):
        if query.startswith("(:", position):
            depth += 1
            position += 2
        elif query.startswith(":)", position):
            depth -= 1
            position += 2
            if depth == 0:
                return position
        else:
            position += 1
    raise ToolError(ErrorType.INVALID_INPUT, "The query has a comment '(:' that is never closed with ':)'.")


def _split(name: str) -> tuple[str | None, str]:
    prefix, _, local = name.rpartition(":")
    return (prefix or None), local


def _check_function(name: str) -> None:
    prefix, local = _split(name)
    if prefix is not None and prefix not in ALLOWED_PREFIXES:
        raise _refuse(
            f"calls '{name}()', outside the standard library",
            "Use the standard functions (fn:, math:, map:, array:, xs:) and your own local: functions.",
        )
    if prefix in (None, "fn") and (
        local in FORBIDDEN_FUNCTIONS or (local not in ("doc", "collection") and _SUSPICIOUS.search(local))
    ):
        raise _refuse(f"calls '{local}()', which reaches outside the library")


def guard(
    query: str,
    *,
    rewrite_collection: Callable[[str | None], str],
    rewrite_document: Callable[[str, str], str],
) -> GuardedQuery:
    """Check ``query`` and rewrite ``collection(...)`` / ``doc(...)`` with the backend's spelling."""
    tokens = tokenize(query)
    without_comments = " ".join(token.text for token in tokens)
    for pattern, reason in _REFUSED_SYNTAX:
        if pattern.search(query) or pattern.search(without_comments):
            hint = "Queries are read-only; store a new version with librarian_store." if "update" in reason else None
            raise _refuse(reason, hint)
    result = GuardedQuery(query)
    replacements: list[tuple[int, int, str]] = []
    predicates = 0  # depth of '[...]': inside one, a leading '/' is the root of the node being tested
    index = 0
    while index < len(tokens):
        token = tokens[index]
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if token.text == "[":
            predicates += 1
        elif token.text == "]":
            predicates = max(0, predicates - 1)
        elif token.text == "/" and not predicates and _starts_path(tokens, index):
            # eXist-db reads '//message' against the chosen collection's documents: say so in standard XQuery.
            context = rewrite_collection(None)
            step = following is not None and following.start == token.end and _begins_step(following)
            replacements.append((token.start, token.start if step else token.end, context))
            index += 2 if following is not None and following.text == "/" and following.start == token.end else 1
            continue
        if _declares_variable(tokens, index):
            result.declared.add(tokens[index + 1].text)
        if token.kind == "eqname":
            raise _refuse("uses a Q{...} name", "Use prefixed names; only the standard library is callable.")
        if token.kind == "string":
            _check_string(token.text)
        elif (
            token.kind == "name"
            and following is not None
            and following.text in ("(", "#")
            and not _is_keyword_paren(tokens, index)
        ):
            prefix, local = _split(token.text)
            if prefix in (None, "fn") and local in ("doc", "collection"):
                index = _document_call(tokens, index, local, result, replacements, rewrite_collection, rewrite_document)
                continue
            _check_function(token.text)
        index += 1
    text = query
    prolog_end = _prolog_end(tokens, setters_only=True)
    for start, end, replacement in sorted(replacements, reverse=True):
        text = text[:start] + replacement + text[end:]
        if start < prolog_end:  # inside the prolog (an insertion right at its end belongs to the body)
            prolog_end += len(replacement) - (end - start)
    result.text = text
    result.prolog_end = prolog_end
    return result


_PROLOG_STARTS = frozenset({"declare", "import", "xquery"})
_OPEN = {"(": ")", "{": "}", "[": "]"}


# Prolog declarations that may only come before variable and function declarations.
_SETTERS = frozenset(
    {"namespace", "default", "boundary-space", "ordering", "construction", "copy-namespaces", "decimal-format"}
)
# What may come before a '/' that starts a path at the top of an expression (not a step of another path).
_PATH_STARTERS = frozenset({"(", ",", "{", ";", "=", "|"})
_PATH_STARTER_WORDS = frozenset(
    {"return", "in", "then", "else", "satisfies", "where", "and", "or", "by", "to", "union", "intersect",
     "except", "eq", "ne", "lt", "le", "gt", "ge", "is", "div", "idiv", "mod"}
)  # fmt: skip


def _starts_path(tokens: list[Token], index: int) -> bool:
    """Whether the '/' at ``index`` is a leading '/' or '//' (the root of the context), not a step separator."""
    if index == 0:
        return True
    before = tokens[index - 1]
    if before.kind == "punct":
        # ':=' and '!=' end in '='; '<' and '>' are left out: they also open and close direct element constructors.
        return before.text in _PATH_STARTERS
    return before.kind == "name" and before.text in _PATH_STARTER_WORDS


def _declares_variable(tokens: list[Token], index: int) -> bool:
    """Whether the '$' at ``index`` names the variable of a 'declare variable $name' (3 tokens before it)."""
    return (
        tokens[index].text == "$"
        and index >= 2
        and tokens[index - 1].text == "variable"
        and tokens[index - 2].text == "declare"
        and index + 1 < len(tokens)
        and tokens[index + 1].kind == "name"
        and tokens[index + 1].start == tokens[index].end
    )


def _begins_step(token: Token) -> bool:
    return token.kind in ("name", "eqname") or token.text in ("/", "*", "@", "(", ".")


def _prolog_end(tokens: list[Token], *, setters_only: bool = False) -> int:
    """The offset just after the last ';' of the leading declarations (0 when there are none).

    With ``setters_only``, stop before the first variable, function, context or option declaration.
    """
    end = 0
    index = 0
    while (
        index + 1 < len(tokens) and tokens[index].text in _PROLOG_STARTS and tokens[index + 1].kind in ("name", "punct")
    ):
        if tokens[index + 1].kind == "punct" and tokens[index + 1].text != "%":
            break
        if setters_only and tokens[index].text == "declare" and tokens[index + 1].text not in _SETTERS:
            break
        depth = 0
        while index < len(tokens):
            text = tokens[index].text
            if tokens[index].kind == "punct":
                if text in _OPEN:
                    depth += 1
                elif text in _OPEN.values():
                    depth -= 1
                elif text == ";" and depth == 0:
                    end = tokens[index].end
                    index += 1
                    break
            index += 1
        else:
            break
    return end


# Names that are followed by '(' without being a function call.
_KEYWORDS = frozenset(
    {
        "if", "typeswitch", "switch", "element", "attribute", "node", "text", "comment", "document-node",
        "processing-instruction", "schema-element", "schema-attribute", "item", "empty-sequence", "function",
        "map", "array", "namespace-node", "return", "in", "satisfies", "and", "or", "then", "else", "where",
        "case", "default", "to", "div", "idiv", "mod", "union", "intersect", "except", "instance", "of", "as",
        "treat", "castable", "cast", "is", "eq", "ne", "lt", "le", "gt", "ge", "order", "by", "ascending",
        "descending", "let", "for", "some", "every", "count", "group", "at", "allowing", "try", "catch",
        "record", "enum",
    }
)  # fmt: skip


def _is_keyword_paren(tokens: list[Token], index: int) -> bool:
    name = tokens[index].text
    if name not in _KEYWORDS:
        return False
    # 'map(' and 'array(' are type tests in 'instance of map(*)', but calls are never unprefixed keywords:
    # a function named 'if' or 'element' cannot be declared, so treating them as syntax is safe.
    return tokens[index + 1].text == "("


def _document_call(
    tokens: list[Token],
    index: int,
    local: str,
    result: GuardedQuery,
    replacements: list[tuple[int, int, str]],
    rewrite_collection: Callable[[str | None], str],
    rewrite_document: Callable[[str, str], str],
) -> int:
    call = tokens[index]
    paren = tokens[index + 1]
    if paren.text != "(":
        raise _refuse(f"refers to {local}#... as a function item", f"Call {local}(...) with a literal name instead.")
    rest = tokens[index + 2 : index + 4]
    if local == "collection" and rest and rest[0].text == ")":
        replacements.append((call.start, rest[0].end, rewrite_collection(None)))
        return index + 3
    if len(rest) == 2 and rest[0].kind == "string" and rest[1].text == ")":
        value = rest[0].text[1:-1]
        canonical = collection_path(value) if local == "collection" else None
        if canonical is not None:
            result.collections.add(canonical)
            replacements.append((call.start, rest[1].end, rewrite_collection(canonical)))
            return index + 4
        found = document_path(value) if local == "doc" else None
        if found is not None:
            result.documents.add(found)
            replacements.append((call.start, rest[1].end, rewrite_document(*found)))
            return index + 4
    if local == "collection":
        raise _refuse(
            "calls collection() with something other than a library collection's name",
            "Use collection() for the chosen collection, or collection('name') with a literal name.",
        )
    raise _refuse(
        "calls doc() with something other than 'collection/document'",
        "Use doc('collection/document') with a literal path, e.g. doc('books/moby.xml').",
    )


def _check_string(literal: str) -> None:
    """Strings can hide code (attribute value templates, or text a lexer misreads): check calls in them too."""
    body = literal[1:-1]
    if re.search(r"Q\s*\{", body) or "(#" in body:
        raise _refuse("hides a Q{...} name or a pragma in a string")
    for match in _CALL_IN_TEXT.finditer(body):
        prefix, local = _split(match.group(1))
        if prefix in (None, "fn") and local in ("doc", "collection"):
            raise _refuse(f"mentions {local}() inside a string, where it cannot be checked")
        if prefix is None and local not in FORBIDDEN_FUNCTIONS and not _SUSPICIOUS.search(local):
            continue
        _check_function(match.group(1))
