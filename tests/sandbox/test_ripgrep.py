from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from toolrig.sandbox.ripgrep import glob_filter, list_files, rg_binary


def test_the_binary_comes_from_the_installed_ripgrep_wheel() -> None:
    binary = Path(rg_binary())
    assert binary.parent == Path(sysconfig.get_path("scripts")).resolve() or "site-packages" in str(binary)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("ripgrep 14.1.0")


def test_positive_globs_become_a_file_type_and_directory_parts_a_check() -> None:
    selection = glob_filter(["src/**/*.{py,pyi}", "!src/gen/**"], ".")
    assert "--type-add=toolrigglob:*.{py,pyi}" in selection.argv and "--glob=!src/gen/**" in selection.argv
    assert selection.accepts("src/a/b.py") and selection.accepts("./src/b.pyi")
    assert not selection.accepts("lib/b.py") and not selection.accepts("src/.hidden/b.py")


def test_list_files_yields_every_file_in_batches_and_stops_when_closed(tmp_path: Path) -> None:
    for index in range(300):
        (tmp_path / f"file-with-a-longish-name-{index:04}.txt").write_text("x")
    batches = list(list_files(tmp_path, ["."]))
    assert sorted(name for batch in batches for name in batch) == sorted(
        f"file-with-a-longish-name-{index:04}.txt" for index in range(300)
    )
    listing = list_files(tmp_path, ["."])
    next(listing)
    listing.close()  # kills ripgrep; no warning about an unwaited process (warnings are errors)


_component = st.sampled_from(["src", "a", ".github", ".hidden", "x.py", ".env", "b.txt", "..", "."])


@given(
    st.lists(st.lists(_component, min_size=1, max_size=4).map("/".join), max_size=30),
    st.sampled_from([["**/*.py"], ["*"], ["src/**/*.py"], [".github/**"], ["!a/**"], ["**/*.py", "!src/**"]]),
    st.booleans(),
)
def test_a_batch_is_kept_exactly_as_name_by_name_checks_would_keep_it(
    names: list[str], patterns: list[str], hidden: bool
) -> None:
    selection = glob_filter(patterns, ".", hidden=hidden)
    assert selection.keep(names) == [name for name in names if selection.accepts(name)]
