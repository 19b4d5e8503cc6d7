"""Reading a config file: YAML into data plus the line of every key, so errors name file, key and line.

Trust model: the file may be anyone's (an untrusted workspace's); it is parsed with the safe loader only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolrig.config.schema import Config
from toolrig.errors import ConfigError

if TYPE_CHECKING:
    import yaml


def _line_index(
    node: yaml.Node, prefix: tuple[str, ...], out: dict[tuple[str, ...], int], twice: list[tuple[str, int, int]]
) -> None:
    """Record the line of every key; a key written twice in one mapping goes to ``twice`` (key, first, second)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            name, line = str(key_node.value), key_node.start_mark.line + 1
            if name in seen and name != "<<":  # '<<' merges a mapping in: YAML allows it more than once
                twice.append((".".join((*prefix, name)), seen[name], line))
            seen.setdefault(name, line)
            key = (*prefix, name)
            out[key] = line
            _line_index(value_node, key, out, twice)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = (*prefix, str(index))
            out[key] = item.start_mark.line + 1
            _line_index(item, key, out, twice)


# One problem of a file: (key, line, message).
Problem = tuple[str, int | None, str]


def _parse(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int], list[Problem]]:
    """The file's data, the line of every key, and its keys written twice; unreadable or not YAML raises."""
    import yaml  # only when a file exists: a call without one never parses YAML

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror}", file=path) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML: {problem}", file=path, line=mark.line + 1 if mark else None) from None
    if data is None:
        return {}, {}, []
    if not isinstance(data, dict):
        raise ConfigError("the top level must be a mapping of settings", file=path, line=1)
    lines: dict[tuple[str, ...], int] = {}
    twice: list[tuple[str, int, int]] = []
    if node is not None:
        _line_index(node, (), lines, twice)
    written_twice = "written twice (first at line {}): YAML keeps only this one, so merge the two into one"
    return data, lines, [(key, second, written_twice.format(first)) for key, first, second in twice]


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """Parse a YAML file into data plus the line of every key; syntax errors and keys written twice raise."""
    data, lines, twice = _parse(path)
    if twice:
        key, line, message = twice[0]
        raise ConfigError(message, file=path, key=key, line=line)
    return data, lines


def _error_line(loc: tuple[int | str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    keys = tuple(str(part) for part in loc)
    for depth in range(len(keys), 0, -1):
        if keys[:depth] in lines:
            return lines[keys[:depth]]
    return None


def _validated(path: Path) -> tuple[Config | None, dict[tuple[str, ...], int], list[Problem]]:
    """The file's config (None when it has problems), its lines, and every problem in line order."""
    data, lines, problems = _parse(path)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            message = error["msg"]
            if error["type"] == "extra_forbidden":
                message = "unknown setting (check its spelling; `toolrig config keys` lists the settings)"
            key = ".".join(str(part) for part in error["loc"])
            problems.append((key, _error_line(error["loc"], lines), message))
        config = None
    return (None if problems else config), lines, sorted(problems, key=lambda p: p[1] or 0)


def file_problems(path: Path) -> list[ConfigError]:
    """Every problem of one config file, in line order, for ``toolrig config check`` (not only the first)."""
    try:
        _, _, problems = _validated(path)
    except ConfigError as exc:
        return [exc]  # unreadable or not YAML: nothing further can be checked
    return [ConfigError(message, file=path, key=key, line=line) for key, line, message in problems]


def validate_file(path: Path) -> tuple[Config, dict[tuple[str, ...], int]]:
    """The file validated, or its first problem (and how many more ``toolrig config check`` lists)."""
    config, lines, problems = _validated(path)
    if config is not None:
        return config, lines
    key, line, message = problems[0]
    if len(problems) > 1:
        more = len(problems) - 1
        message += f" (and {more} more problem{'s' if more > 1 else ''} here: `toolrig config check` lists them)"
    raise ConfigError(message, file=path, key=key, line=line)
