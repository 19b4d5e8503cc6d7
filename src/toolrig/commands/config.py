"""``toolrig config``: which files are read, what they set and where, whether it holds, and every setting there is."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolrig.cli import root_option

if TYPE_CHECKING:
    from toolrig.config import LoadedConfig

EXIT_CONFIG = 2

_root = root_option("Workspace whose .toolrig/config.yaml is read.")


def _files(root: Path) -> list[tuple[str, Path]]:
    from toolrig.config import CONFIG_FILE
    from toolrig.sandbox.paths import STATE_DIR_NAME, toolrig_home

    return [("user", toolrig_home() / CONFIG_FILE), ("workspace", root.resolve() / STATE_DIR_NAME / CONFIG_FILE)]


def _load(root: Path) -> LoadedConfig:
    from toolrig.config import load_config
    from toolrig.errors import ConfigError

    try:
        return load_config(root)
    except ConfigError as exc:
        click.echo(f"toolrig: error: {exc}", err=True)
        sys.exit(EXIT_CONFIG)


@click.group("config")
def command() -> None:
    """Inspect toolrig's configuration (~/.toolrig/config.yaml, then the workspace's .toolrig/config.yaml).

    A workspace's file is trusted only after `toolrig trust`; until then it may only narrow what the
    user's file allows, and `toolrig config show` marks what it ignored.
    """


@command.command("path")
@_root
def path(rig_root: Path) -> None:
    """The files toolrig reads, in order (later ones override earlier ones), and whether each exists."""
    from toolrig.config import is_trusted

    for kind, file in _files(rig_root):
        state = "exists" if file.is_file() else "missing"
        if kind == "workspace" and file.is_file():
            state += ", trusted" if is_trusted(rig_root) else ", not trusted: may only narrow (`toolrig trust`)"
        click.echo(f"{kind:<10} {file}  ({state})")


@command.command("check")
@_root
def check(rig_root: Path) -> None:
    """Validate the config files; print every problem as FILE:LINE: key: problem and exit 2 if there is one."""
    from toolrig.config import file_problems
    from toolrig.errors import ConfigError

    problems = [p for _, file in _files(rig_root) if file.is_file() for p in file_problems(file)]
    loaded = None
    if not problems:  # each file holds; what they name (tools, their settings) is checked against the catalog
        try:
            loaded = _load_checked(rig_root)
        except ConfigError as exc:
            problems.append(exc)
    for problem in problems:
        click.echo(f"toolrig: error: {problem}", err=True)
    if loaded is None:
        sys.exit(EXIT_CONFIG)
    names = ", ".join(str(f) for f in loaded.files) or "no config files (defaults only)"
    click.echo(f"ok: {names}")


def _load_checked(root: Path) -> LoadedConfig:
    """The merged config, after a Rig was built on it: its start-up checks are the config's last ones."""
    from toolrig.config import load_config
    from toolrig.rig import Rig

    loaded = load_config(root)
    with Rig(root, config=loaded):
        return loaded


def _leaves(value: Any, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict) and value:
        out: list[tuple[tuple[str, ...], Any]] = []
        for key, item in value.items():
            out.extend(_leaves(item, (*prefix, str(key))))
        return out
    return [(prefix, value)]


def _lookup(data: Any, keys: tuple[str, ...]) -> tuple[bool, Any]:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return False, None
        data = data[key]
    return True, data


@command.command("show")
@_root
@click.option("--json", "as_json", is_flag=True, help="One JSON object per setting (key, value, file, line, status).")
def show(rig_root: Path, as_json: bool) -> None:
    """The merged config: every value a file sets, with the file and line it came from.

    Status: `trusted` (the user's file or a trusted workspace), `narrowed` (an untrusted workspace's value
    that applies because it only narrows), or `ignored` (an untrusted workspace's value that would widen).
    Settings no file sets keep their defaults (`toolrig config keys` lists them).
    """
    from toolrig.config import read_yaml

    loaded = _load(rig_root)
    workspace_file = _files(rig_root)[1][1]
    merged = loaded.config.model_dump(mode="json")
    rows: list[dict[str, Any]] = []
    for file in loaded.files:
        data, lines = read_yaml(file)
        is_workspace = file.resolve() == workspace_file.resolve()
        for keys, value in _leaves(data, ()):
            found, current = _lookup(merged, keys)
            if not is_workspace or loaded.trusted:
                status = "trusted"
            else:
                status = "narrowed" if found and current == value else "ignored"
            line = next((lines[keys[:d]] for d in range(len(keys), 0, -1) if keys[:d] in lines), None)
            rows.append({"key": ".".join(keys), "value": value, "file": str(file), "line": line, "status": status})
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))
        return
    if not rows:
        click.echo("no config files set anything: every setting has its default (`toolrig config keys`)")
    for row in rows:
        value = json.dumps(row["value"], ensure_ascii=False)
        click.echo(f"{row['key']} = {value}    # {row['file']}:{row['line']} ({row['status']})")


@command.command("keys")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per setting.")
def keys(as_json: bool) -> None:
    """Every setting: its dotted key, type, default and meaning (generated from the config models)."""
    from dataclasses import asdict

    from toolrig.config_keys import settings

    listed = settings()
    if as_json:
        for item in listed:
            click.echo(json.dumps(asdict(item), ensure_ascii=False))
        return
    width = max(len(s.key) for s in listed)
    for item in listed:
        default = f" (default {item.default})" if item.default else ""
        meaning = f"  {item.meaning}" if item.meaning else ""
        click.echo(f"{item.key:<{width}}  {item.type}{default}{meaning}")


@command.group("import")
def import_group() -> None:
    """Bring another agent's configuration into toolrig's."""


@import_group.command("camelagi")
@click.argument("path", type=click.Path(exists=True, path_type=Path), default=Path("~/.camelagi").expanduser())
@click.option(
    "--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), help="Default: ~/.toolrig/config.yaml."
)
@click.option("--hooks-dir", type=click.Path(file_okay=False, path_type=Path), help="Default: ~/.toolrig/hooks.")
@click.option("--force", is_flag=True, help="Replace an existing config file.")
@click.option("--copy-key", is_flag=True, help="Copy a literal apiKey into the config (default: name the variable).")
@click.option("--dry-run", is_flag=True, help="Print the converted config and notes; write nothing.")
def import_camelagi(
    path: Path, out_file: Path | None, hooks_dir: Path | None, force: bool, copy_key: bool, dry_run: bool
) -> None:
    """Convert CamelAGI's config.yaml (PATH: the file or ~/.camelagi) and its hooks into toolrig's.

    The model keeps CamelAGI's tool names (llm.tool_profile: camelagi); tools.deny and the approvals
    allowlist keep their meaning ("Bash:git *", "Edit:/src/*"); each hook {point}.{name}.sh|.js becomes a
    toolrig hook that runs it with CAMELAGI_HOOK_* variables (.js with node).
    """
    import yaml

    from toolrig.commands import _camelagi
    from toolrig.config import config_from
    from toolrig.errors import ConfigError
    from toolrig.sandbox.atomic import atomic_write_text
    from toolrig.sandbox.paths import toolrig_home

    try:
        data, hooks_source = _camelagi.load(path)
    except (OSError, ValueError, yaml.YAMLError) as exc:  # a YAML error names its line
        click.echo(f"toolrig: error: cannot read {path}: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    converted = _camelagi.convert(data, copy_key=copy_key)
    _camelagi.find_hooks(hooks_source, converted)
    try:
        config_from(converted.config)  # what is written must load
    except ConfigError as exc:
        click.echo(f"toolrig: error: the converted config does not hold: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    text = _camelagi.dump(converted.config)
    target = out_file or toolrig_home() / "config.yaml"
    hooks_target = hooks_dir or toolrig_home() / "hooks"
    if dry_run:
        click.echo(text, nl=False)
    elif target.exists() and not force:
        click.echo(f"toolrig: error: {target} exists: pass --force to replace it, or --out FILE", err=True)
        sys.exit(EXIT_CONFIG)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, text)
        target.chmod(0o600)
        click.echo(f"wrote {target}")
        for hook in _camelagi.install_hooks(converted, hooks_target):
            click.echo(f"wrote hook {hook}")
    for note in converted.notes:
        click.echo(f"note: {note}", err=True)
