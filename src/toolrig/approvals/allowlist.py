"""Saving "allow always" answers into a config file's allowlist without disturbing the rest of it.

Trust model: the file is the user's own (or a trusted workspace's); only patterns the user just approved
are added. The edit is a YAML round trip (comments, order and quoting kept), checked against the config
schema before it replaces the file atomically, under a lock so two processes do not lose each other's entry.
"""

from __future__ import annotations

import fcntl
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from toolrig.config import Config
from toolrig.errors import ConfigError
from toolrig.sandbox.atomic import atomic_write_text


def add_patterns(path: Path, keys: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """Append the patterns missing from the list at ``keys`` (like ``approvals.allow``); return those added."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        editor = YAML()
        editor.preserve_quotes = True
        editor.width = 4096
        mapping, offset = _indentation(text)
        editor.indent(mapping=mapping, sequence=offset + 2, offset=offset)
        data: Any = editor.load(text) if text.strip() else None
        if data is None:
            data = CommentedMap()
        if not isinstance(data, dict):
            raise ConfigError("the top level must be a mapping of settings", file=path, line=1)
        node = data
        for depth, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = CommentedMap()
            if not isinstance(child, dict):
                raise ConfigError("expected a mapping here", file=path, key=".".join(keys[: depth + 1]))
            node = child
        current = node.get(keys[-1])
        if current is None:
            current = node[keys[-1]] = CommentedSeq()
        if not isinstance(current, list):
            raise ConfigError("expected a list here", file=path, key=".".join(keys))
        added = [p for p in dict.fromkeys(patterns) if p not in current]
        if not added:
            return []
        current.extend(added)
        out = io.StringIO()
        editor.dump(data, out)
        new_text = out.getvalue()
        try:
            Config.model_validate(yaml.safe_load(new_text) or {})
        except ValidationError as exc:
            raise ConfigError(f"saving the allowlist would break the file: {exc}", file=path) from None
        atomic_write_text(path, new_text)
        return added


_KEY_THEN_ITEM = re.compile(r"^( *)[^\s#-][^\n]*:[ \t]*(?:#[^\n]*)?\n( *)- ", re.MULTILINE)
_NESTED_KEY = re.compile(r"^[^\s#][^\n]*:[ \t]*(?:#[^\n]*)?\n( +)[^\s#-]", re.MULTILINE)


def _indentation(text: str) -> tuple[int, int]:
    """The file's own indentation (mapping step, dash offset), so the rewritten file looks like the old one."""
    nested = _NESTED_KEY.search(text)
    mapping = len(nested.group(1)) if nested else 2
    item = _KEY_THEN_ITEM.search(text)
    offset = max(0, len(item.group(2)) - len(item.group(1))) if item else 0
    return mapping, offset
