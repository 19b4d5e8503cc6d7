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


def _line_index(node: yaml.Node, prefix: tuple[str, ...], out: dict[tuple[str, ...], int]) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = (*prefix, str(key_node.value))
            out[key] = key_node.start_mark.line + 1
            _line_index(value_node, key, out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = (*prefix, str(index))
            out[key] = item.start_mark.line + 1
            _line_index(item, key, out)


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[tuple[str, ...], int]]:
    """Parse a YAML file into data plus the line of every key; syntax errors name file and line."""
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
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError("the top level must be a mapping of settings", file=path, line=1)
    lines: dict[tuple[str, ...], int] = {}
    if node is not None:
        _line_index(node, (), lines)
    return data, lines


def _error_line(loc: tuple[int | str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    keys = tuple(str(part) for part in loc)
    for depth in range(len(keys), 0, -1):
        if keys[:depth] in lines:
            return lines[keys[:depth]]
    return None


def validate_file(path: Path) -> tuple[Config, dict[tuple[str, ...], int]]:
    data, lines = read_yaml(path)
    try:
        return Config.model_validate(data), lines
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        key = ".".join(str(part) for part in first["loc"])
        message = first["msg"]
        if first["type"] == "extra_forbidden":
            message = "unknown setting (check its spelling; `toolrig config --help` lists the settings)"
        more = len(exc.errors()) - 1
        if more:
            message += f" (and {more} more problem{'s' if more > 1 else ''} in this file)"
        raise ConfigError(message, file=path, key=key, line=_error_line(first["loc"], lines)) from None
