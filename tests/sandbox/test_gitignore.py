from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.file_helpers import git_init, write
from toolrig.sandbox.gitignore import IgnoreRules

TREE = {
    ".gitignore": "*.log\n!keep.log\nbuild/\n/top-only.txt\nnested-negated/\n!nested-negated/x.txt\ndoc/**/*.tmp\n",
    "keep.log": "",
    "a.log": "",
    "top-only.txt": "",
    "sub/top-only.txt": "",
    "build/out.bin": "",
    "sub/build/out.bin": "",
    "nested-negated/x.txt": "",
    "doc/a/b/c.tmp": "",
    "doc/c.tmp": "",
    "sub/.gitignore": "!a.log\n*.py\n",
    "sub/a.log": "",
    "sub/code.py": "",
    "sub/deeper/code.py": "",
    "excluded.txt": "",
    "sub/deeper/.gitignore": "!code.py\n",
    "plain.txt": "",
    "spaces in name.md": "",
}


def test_verdicts_agree_with_git_check_ignore_on_every_path(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, TREE)
    git_init(root)
    (root / ".git/info").mkdir(exist_ok=True)
    (root / ".git/info/exclude").write_text("excluded.txt\n")
    paths = [*sorted(name for name in TREE if not name.endswith(".gitignore")), "build", "sub/build", "doc/a"]
    git = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(paths) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    ignored_by_git = set(git.stdout.split("\n")) - {""}
    rules = IgnoreRules()
    ours = {p for p in paths if rules.ignored(root / p)}
    # git check-ignore reports a file inside an ignored directory only by the directory's own pattern.
    inside_ignored_dir = {p for p in paths if any(p.startswith(d + "/") for d in ("build", "sub/build"))}
    assert ours - inside_ignored_dir == ignored_by_git - inside_ignored_dir
    assert inside_ignored_dir <= ours
    assert "nested-negated/x.txt" in ours  # a file in an excluded directory cannot be re-included


def test_outside_a_git_repository_nothing_is_ignored(tmp_path: Path) -> None:
    write(tmp_path / "plain", {".gitignore": "*.log\n", "a.log": ""})
    assert not IgnoreRules().ignored(tmp_path / "plain/a.log")


def test_a_symlinked_gitignore_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, {"rules": "*.txt\n", "a.txt": ""})
    git_init(root)
    (root / ".gitignore").symlink_to(root / "rules")
    assert not IgnoreRules().ignored(root / "a.txt")


def test_git_internals_are_not_reported_as_ignored(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, {".gitignore": "*\n"})
    git_init(root)
    assert not IgnoreRules().ignored(root / ".git/config")
