from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.sandbox.shell_syntax import analyse, matches


def texts(command: str) -> list[str]:
    return [c.text for c in analyse(command).commands]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", ["git status"]),
        ("git status && rm -rf ~", ["git status", "rm -rf ~"]),
        ("a; b || c | d", ["a", "b", "c", "d"]),
        ("(cd src && make)", ["cd src", "make"]),
        ("{ ls; pwd; }", ["ls", "pwd"]),
        ('git commit -m "two words"', ["git commit -m two words"]),
        ("FOO=1 BAR=2 make test", ["make test"]),
        ("timeout 10 pytest -q", ["pytest -q"]),
        ("timeout -s KILL 5 nice -n 10 env A=1 B=2 make", ["make"]),
        ("nice make", ["make"]),
        ("sudo rm -rf /", ["sudo rm -rf /"]),
        ("find . | xargs rm", ["find .", "xargs rm"]),
        ("env", ["env"]),
        ("timeout 5", ["timeout 5"]),
    ],
)
def test_simple_commands_are_found_and_harmless_wrappers_peeled(command: str, expected: list[str]) -> None:
    assert texts(command) == expected


@pytest.mark.parametrize(
    ("command", "hidden"),
    [
        ("echo $(rm -rf /)", "rm -rf /"),
        ("echo `rm -rf /`", "rm -rf /"),
        ("diff <(curl x) <(ls)", "curl x"),
        ("bash -c 'rm -rf /'", "rm -rf /"),
        ('sh -c "git push && rm -rf /"', "rm -rf /"),
        ("eval 'rm -rf /'", "rm -rf /"),
        ("for f in *; do rm $f; done", "rm $f"),
        ("if true; then rm -rf /; fi", "rm -rf /"),
    ],
)
def test_commands_hidden_inside_others_are_found_and_flagged(command: str, hidden: str) -> None:
    result = analyse(command)
    assert result.parsed and not result.plain
    assert hidden in [c.text for c in result.commands]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("$CMD --force", "from a variable"),
        ("echo hi > notes.txt", "redirects output to a file"),
        ("cat <<EOF\nx\nEOF", "here-document"),
        ("sleep 100 &", "background"),
        ("X=1", "only sets shell variables"),
        ("f() { rm -rf /; }", "function"),
        ("echo $HOME", "changed by the shell at run time"),
        ("ls *.py", "a glob"),
    ],
)
def test_what_is_not_provably_plain_says_why(command: str, reason: str) -> None:
    result = analyse(command)
    assert not result.plain
    assert any(reason in r for r in result.reasons), result.reasons


@pytest.mark.parametrize(
    "command",
    ["ls 2>&1", "make 2>/dev/null", "wc -l < input.txt", "git log | head -5", "echo '$(not run)'", "echo '$HOME'"],
)
def test_plain_commands_are_plain(command: str) -> None:
    assert analyse(command).plain, analyse(command).reasons


@pytest.mark.parametrize("command", ["echo 'unterminated", "[[ -f x ]] && y", "", "   ", "a\x00b", "((("])
def test_unparseable_commands_are_reported_not_raised(command: str) -> None:
    result = analyse(command)
    assert not result.parsed and not result.plain and result.reasons


def test_deny_texts_see_through_every_wrapper() -> None:
    (command,) = analyse("sudo -u root nohup nice -n 5 rm -rf /").commands
    assert command.text == "sudo -u root nohup nice -n 5 rm -rf /"
    assert "rm -rf /" in command.deny_texts
    (xargs,) = analyse("xargs -n 1 rm").commands
    assert "rm" in xargs.deny_texts


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("git *", "git status", True),
        ("git *", "git", True),
        ("git *", "gitx status", False),
        ("git", "git status", False),
        ("rm -rf *", "rm -rf /tmp/x", True),
        ("rm -rf *", "rm -r /tmp/x", False),
        ("npm run *", "npm run test -- --watch", True),
        ("*", "anything at all", True),
    ],
)
def test_command_patterns_are_globs_over_the_words(pattern: str, text: str, expected: bool) -> None:
    assert matches(pattern, text) is expected


def test_deeply_nested_shells_do_not_recurse_forever() -> None:
    command = "rm -rf /"
    for _ in range(8):
        command = f"bash -c {shlex.quote(command)}"
    result = analyse(command)
    assert not result.plain
    assert any("too deeply" in r for r in result.reasons)


word = st.text(alphabet=st.characters(codec="ascii", exclude_characters="\x00"), min_size=1, max_size=12)
separators = st.sampled_from([" ; ", " && ", " || ", " | ", "\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(word, min_size=1, max_size=4), min_size=1, max_size=4), separators)
def test_quoted_words_joined_by_operators_are_read_back_exactly(commands: list[list[str]], sep: str) -> None:
    line = sep.join(" ".join(shlex.quote(w) for w in argv) for argv in commands)
    result = analyse(line)
    if not result.parsed:
        return  # bashlex refuses some exotic quoting; refusing is the safe outcome
    if any(argv[0] in ("timeout", "nice", "env") or re.match(r"[A-Za-z_]\w*=", argv[0]) for argv in commands):
        return  # leading assignments and wrappers are peeled by design (tested above)
    assert [list(c.argv) for c in result.commands] == commands or not result.plain


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_never_raises(text: str) -> None:
    result = analyse(text)
    assert result.parsed or result.reasons


@pytest.mark.parametrize(
    "command",
    ["$CMD -rf /", 'eval "$PAYLOAD"', 'bash -c "$SCRIPT"', "source ./setup.sh", ". ./setup.sh"],
)
def test_commands_that_may_run_unseen_code_are_not_readable(command: str) -> None:
    result = analyse(command)
    assert result.parsed and not result.readable and result.opaque


@pytest.mark.parametrize(
    "command",
    ["echo $(rm -rf /)", "echo $(date +%s)", "for f in *; do rm $f; done", "eval 'rm -rf /'", "sleep 1 &"],
)
def test_not_plain_is_not_the_same_as_unreadable(command: str) -> None:
    result = analyse(command)
    assert result.readable and not result.plain


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/bin/rm -rf /", "rm -rf /"),
        ("/usr/bin/sudo /bin/rm -rf /", "rm -rf /"),
        ("./node_modules/.bin/eslint .", "eslint ."),
    ],
)
def test_deny_texts_name_path_programs_by_their_base_name(command: str, expected: str) -> None:
    assert expected in analyse(command).commands[0].deny_texts
