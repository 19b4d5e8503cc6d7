"""Where skills are found: the workspace's own folders first (only once it is trusted), then the user's.

Trust model: a workspace is someone else's repository until ``toolrig trust`` says otherwise, and a skill
is instructions a model will follow (and, through ``allowed-tools``, approvals it gets), so an untrusted
workspace's skills are not loaded; the user is told they were ignored. The first skill of a name wins,
so a project skill shadows a user skill of the same name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolrig.sandbox.paths import STATE_DIR_NAME, is_within, toolrig_home
from toolrig.skills.skill import SKILL_FILE, Skill, SkillError, read_skill

PROJECT_DIRS = (f"{STATE_DIR_NAME}/skills", ".agents/skills", ".claude/skills")
MAX_SKILLS_PER_FOLDER = 500


@dataclass(frozen=True, slots=True)
class SkillRoot:
    path: Path
    scope: str  # "project", "user" or "config"


@dataclass
class SkillSet:
    """The skills one workspace offers, in discovery order, and what was wrong along the way."""

    skills: dict[str, Skill] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    roots: list[SkillRoot] = field(default_factory=list)

    def names(self) -> list[str]:
        return list(self.skills)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def __len__(self) -> int:
        return len(self.skills)


def skill_roots(workspace_root: Path, *, trusted: bool, extra_paths: Sequence[str] = ()) -> list[SkillRoot]:
    """The folders to search, in order; a workspace's own folders only when it is trusted."""
    roots = [SkillRoot(workspace_root / d, "project") for d in PROJECT_DIRS] if trusted else []
    roots += [SkillRoot(toolrig_home() / "skills", "user"), SkillRoot(Path.home() / ".agents" / "skills", "user")]
    for extra in extra_paths:
        path = Path(extra).expanduser()
        roots.append(SkillRoot(path if path.is_absolute() else workspace_root / path, "config"))
    return roots


def workspace_skills(workspace_root: Path, extra_paths: Sequence[str] = ()) -> SkillSet:
    """The skills a workspace offers: its own folders only once the user trusted it, and ``skills.paths``."""
    from toolrig.config import is_trusted

    return discover(workspace_root, trusted=is_trusted(workspace_root), extra_paths=extra_paths)


def discover(workspace_root: Path, *, trusted: bool, extra_paths: Sequence[str] = ()) -> SkillSet:
    """Every skill under the roots, first of a name winning; problems become warnings, never exceptions."""
    workspace_root = workspace_root.resolve()
    found = SkillSet(roots=skill_roots(workspace_root, trusted=trusted, extra_paths=extra_paths))
    if not trusted:
        ignored = [d for d in PROJECT_DIRS if _has_skills(workspace_root / d)]
        if ignored:
            found.warnings.append(
                f"{', '.join(ignored)} in {workspace_root}: skills ignored because the workspace is not trusted "
                "(run `toolrig trust` there to use them)"
            )
    seen_dirs: set[Path] = set()
    for root in found.roots:
        for directory in _skill_dirs(root, workspace_root, found.warnings):
            real = directory.resolve()
            if real in seen_dirs:
                continue
            seen_dirs.add(real)
            try:
                skill = read_skill(directory, root.scope)
            except (SkillError, OSError) as exc:
                found.warnings.append(f"{directory / SKILL_FILE}: skipped: {exc}")
                continue
            found.warnings.extend(f"{skill.location}: {w}" for w in skill.warnings)
            if skill.name in found.skills:
                first = found.skills[skill.name].location
                found.warnings.append(f"{skill.location}: skipped: the name {skill.name!r} is taken by {first}")
                continue
            found.skills[skill.name] = skill
    return found


def _has_skills(path: Path) -> bool:
    try:
        return path.is_dir() and any((child / SKILL_FILE).exists() for child in path.iterdir())
    except OSError:
        return False


def _skill_dirs(root: SkillRoot, workspace_root: Path, warnings: list[str]) -> Iterable[Path]:
    """The immediate subfolders of ``root`` that hold a SKILL.md, by name; a project's may not leave it."""
    try:
        if not root.path.is_dir():
            return []
        children = sorted(root.path.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        warnings.append(f"{root.path}: cannot be listed: {exc.strerror or exc}")
        return []
    dirs = []
    for child in children:
        if child.name.startswith(".") or not child.is_dir() or not (child / SKILL_FILE).exists():
            continue
        if root.scope == "project" and not is_within(child.resolve(), workspace_root):
            warnings.append(f"{child}: skipped: it links outside the workspace")
            continue
        dirs.append(child)
        if len(dirs) >= MAX_SKILLS_PER_FOLDER:
            warnings.append(f"{root.path}: more than {MAX_SKILLS_PER_FOLDER} skills; the rest are ignored")
            break
    return dirs
