"""Expansions bash can turn into code are opaque under a deny list, wherever they stand (issue 31, item 5).

``${x@P}`` expands a value as a prompt (command substitutions run), ``${!x}`` and arithmetic (``((x))``, ``$[x]``,
``let x``) evaluate a subscript in a value (``a[$(cmd)]`` runs cmd), ``${x@E}`` decodes escapes. The value comes
from anywhere (``read``, a loop variable, the environment), so no reading of the text can say what runs: a
deny-only list refuses them (hypothesis over forms and positions). Single-quoted, they are literal text and pass.
Where the kernel confines the command, an allow list no longer asks for plain commands around allowed ones.
"""

from __future__ import annotations

import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.tools.shell import RunCommandConfig, judge

DENY = RunCommandConfig(deny=["rm *"])
FORMS = ["${NAME@P}", "${NAME@E}", "${!NAME}", "${!NAME@P}", "${NAME:-${OTHER@P}}", "$((NAME))", "$[NAME]"]
POSITIONS = [
    "echo {f}",
    'echo "{f}"',
    "echo x > {f}",
    "cat <<< {f}",
    "echo $(echo {f})",
    "for i in 1; do echo {f}; done",
    "true && printf '%s' {f}",
    "echo a | grep {f}",
    "if true; then echo {f}; fi",
]
names = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


@settings(max_examples=120, deadline=None)
@given(form=st.sampled_from(FORMS), position=st.sampled_from(POSITIONS), name=names, other=names)
def test_an_expansion_that_evaluates_a_value_is_opaque_under_a_deny_list(
    form: str, position: str, name: str, other: str
) -> None:
    command = position.format(f=form.replace("NAME", name).replace("OTHER", other))
    assert judge(command, DENY) is not None, command


@settings(max_examples=60, deadline=None)
@given(form=st.sampled_from(FORMS), name=names)
def test_single_quoted_it_is_literal_text_and_passes(form: str, name: str) -> None:
    assert judge(f"echo '{form.replace('NAME', name).replace('OTHER', name)}'", DENY) is None


def test_the_class_is_real_a_prompt_expansion_runs_a_command_substitution() -> None:
    done = subprocess.run(
        ["bash", "-c", "read -r x <<< '$(echo ran)'; echo ${x@P}; a=(); read -r y <<< 'a[$(echo sub >&2)]'; : ${!y}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout == "ran\n" and "sub" in done.stderr


def test_let_of_a_name_is_opaque_of_numbers_is_not() -> None:
    assert judge("let x", DENY) is not None
    assert judge("let 1+2", DENY) is None


# Commands people expect to work under an allow list of their build tools, with what each uses.
EXPECTED = [
    "bash -lc 'make test'",
    "make > build.log 2>&1",
    "make -j4 2>&1 | tee build.log",
    "make serve &",
    "git log -1 > last.txt",
    "bash -c 'git status && make'",
    "cat <<EOF > notes.txt\nhello\nEOF",
]
ALLOW = RunCommandConfig(allow=["make*", "git *", "npm run *", "tee *", "cat*"])


def test_under_the_kernel_an_allow_list_accepts_plain_commands_around_allowed_ones() -> None:
    refused_bare = [c for c in EXPECTED if judge(c, ALLOW) is not None]
    refused_confined = [c for c in EXPECTED if judge(c, ALLOW, confined=True) is not None]
    assert refused_confined == [], refused_confined
    # Unconfined, all but the plain pipe still ask for a plain command (6 of 7 refused before the sandbox).
    assert refused_bare == [c for c in EXPECTED if "tee" not in c]


def test_under_the_kernel_an_allow_list_still_refuses_what_it_cannot_see_or_did_not_allow() -> None:
    still = ["bash -lc 'rm -rf x'", "make $(rm x)", "eval make", "git $x", "xargs make", 'sh -c "$x"']
    # Still refused, over-strict: an argument made by a substitution (it could be an option that runs a program)
    # and package scripts (npm run: the script is the workspace's, not in the command line).
    still += ['git commit -m "$(git log -1 --format=%s)"', "npm run dev"]
    for command in still:
        assert judge(command, ALLOW, confined=True) is not None, command
