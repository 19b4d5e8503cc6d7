from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian.guard import guard


def rewrite(query: str) -> str:
    return guard(
        query,
        rewrite_collection=lambda name: f"$c_{name or 'default'}",
        rewrite_document=lambda collection, name: f"$d_{collection}",
    ).text


def test_guard_rewrites_collection_and_doc_calls_with_literal_names() -> None:
    assert rewrite("count(collection('books')) + count(collection())") == "count($c_books) + count($c_default)"
    assert rewrite("fn:doc('books/moby.xml')//title") == "$d_books//title"


def test_guard_leaves_strings_comments_and_element_names_that_look_like_calls_alone() -> None:
    query = "(: doc('x') is fine in a comment :) <doc>{ 'plain text' }</doc>, element doc { 1 }"
    assert rewrite(query) == query


def test_guard_places_added_declarations_after_the_setters_before_the_querys_own_variables() -> None:
    guarded = guard(
        "xquery version '3.1'; declare namespace x = 'urn:x'; declare variable $a := collection(); $a",
        rewrite_collection=lambda name: "$c",
        rewrite_document=lambda c, n: "$d",
    )
    text = guarded.with_declarations(["declare variable $c external;"])
    assert text == (
        "xquery version '3.1'; declare namespace x = 'urn:x'; declare variable $c external; "
        "declare variable $a := $c; $a"
    )


def test_guard_refuses_an_unclosed_comment_as_invalid_input() -> None:
    with pytest.raises(ToolError) as caught:
        rewrite("1 (: never closed")
    assert caught.value.error_type is ErrorType.INVALID_INPUT


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("doc(ltin)'\"{}:#Q;$ ,/.-_aeurx%")), max_size=60))
def test_guard_either_accepts_or_refuses_with_a_tool_error_never_crashes(query: str) -> None:
    try:
        rewrite(query)
    except ToolError as err:
        assert err.error_type in (ErrorType.DENIED, ErrorType.INVALID_INPUT)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_guard_never_lets_an_unparsed_text_call_through_whatever_surrounds_it(noise: str) -> None:
    with pytest.raises(ToolError):
        rewrite(f"{noise} unparsed-text('/etc/passwd') {noise}")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("//message", "$c_default//message"),
        ("/conversation/message", "$c_default/conversation/message"),
        ("count(//m), /", "count($c_default//m), $c_default"),
        ("for $x in //m return $x", "for $x in $c_default//m return $x"),
        ("declare variable $a := //m; $a", "declare variable $a := $c_default//m; $a"),
        ("$x//m", "$x//m"),
        ("a/b//c", "a/b//c"),
        ("//m[//n]", "$c_default//m[//n]"),
        ("<a>{//m}</a>", "<a>{$c_default//m}</a>"),
        ("<a><b/></a>", "<a><b/></a>"),
        ("//*/@x", "$c_default//*/@x"),
        ("10 div 2", "10 div 2"),
    ],
)
def test_a_leading_slash_reads_the_chosen_collection_and_a_step_slash_is_left_alone(query: str, expected: str) -> None:
    assert rewrite(query) == expected


def test_variables_passed_but_not_declared_get_an_external_declaration() -> None:
    guarded = guard(
        "declare variable $a external; $a, $b",
        rewrite_collection=lambda name: "$c",
        rewrite_document=lambda c, n: "$d",
    )
    assert guarded.declared == {"a"}
    assert guarded.with_declarations(guarded.externals(["a", "b"])) == (
        "declare variable $b external; declare variable $a external; $a, $b"
    )


@pytest.mark.parametrize(
    "query",
    [
        "//x[unparsed-text('/etc/passwd')]",
        "/ ! doc('/etc/passwd')",
        "collection('/etc')//x",
        "doc('/db/../../etc/passwd')",
        "doc('/etc/passwd.xml')",
        "//x ! file:read-text('/etc/passwd')",
    ],
)
def test_exist_db_paths_and_leading_slashes_open_no_new_way_out(query: str) -> None:
    with pytest.raises(ToolError) as caught:
        rewrite(query)
    assert caught.value.error_type is ErrorType.DENIED
