"""The registry: which tools exist, found lazily so that start-up pays only for what a command touches.

Built-in groups are the modules of ``toolrig.tools`` (one group per module, each exporting ``TOOLS``);
third-party packages add tools through the ``toolrig.tools`` entry-point group. Neither is imported until
a tool from it is needed.
"""

from __future__ import annotations

import builtins
import fnmatch
import importlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import ModuleType
from typing import Any

from toolrig.definition import Tool, validate_name
from toolrig.errors import DefinitionError, UsageError
from toolrig.profiles import aliases_of

log = logging.getLogger("toolrig.registry")

BUILTIN_PACKAGE = "toolrig.tools"
ENTRY_POINT_GROUP = "toolrig.tools"
ENTRY_POINTS_KEY = "entry-points"  # the lazy group of every installed plugin's tools

AnyTool = Tool[Any, Any]


class UnknownToolError(UsageError, KeyError):
    """Asked for a tool the registry does not hold."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        close = fnmatch.filter(known, f"*{name[:4]}*")[:3] if name else []
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        self.name = name
        super().__init__(f"no tool named {name!r}.{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


def builtin_group_names() -> list[str]:
    from toolrig.tools import group_names

    return group_names()


def _tools_from(obj: Any, origin: str) -> list[AnyTool]:
    """Accept what a group or entry point offers: a tool, a Tool subclass, a module, or a callable/list of them."""
    if isinstance(obj, Tool):
        return [obj]
    if isinstance(obj, type) and issubclass(obj, Tool):
        return [obj()]
    if isinstance(obj, ModuleType):
        if not hasattr(obj, "TOOLS"):
            raise DefinitionError(f"{origin}: module {obj.__name__} has no TOOLS list")
        return _tools_from(obj.TOOLS, origin)
    if callable(obj):
        return _tools_from(obj(), origin)
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes):
        return [t for item in obj for t in _tools_from(item, origin)]
    raise DefinitionError(f"{origin}: {obj!r} is not a tool")


class Registry:
    """Tools by name. ``Registry.default()`` holds the built-in catalog and installed plugins."""

    def __init__(self, tools: Iterable[AnyTool] = ()) -> None:
        self._tools: dict[str, AnyTool] = {}
        self._origin: dict[str, str] = {}
        self._aliases: dict[str, str] = {}  # display name -> name
        self._pending: dict[str, Callable[[], list[AnyTool]]] = {}
        self._remote: set[str] = set()  # pending groups that cost a process or a connection to list (MCP)
        for item in tools:
            self.add(item)

    @classmethod
    def default(cls, *, entry_points: bool = True) -> Registry:
        registry = cls()
        for group in builtin_group_names():
            registry.add_lazy_group(f"builtin:{group}", _builtin_loader(group))
        if entry_points:
            registry.add_lazy_group(ENTRY_POINTS_KEY, _entry_point_loader)
        return registry

    # ------------------------------------------------------------------------------------ building

    def add(self, item: AnyTool, *, origin: str = "added") -> AnyTool:
        if not isinstance(item, Tool):
            raise DefinitionError(f"{item!r} is not a Tool instance (did you forget to instantiate the class?)")
        validate_name(item.name)
        if item.name in self._tools and self._tools[item.name] is not item:
            raise DefinitionError(
                f"tool name {item.name!r} is taken twice: by {self._origin[item.name]} and by {origin}"
            )
        self._tools[item.name] = item
        self._origin[item.name] = origin
        if item.display_name and item.display_name != item.name:
            self._aliases[item.display_name] = item.name
        for alias in getattr(item, "aliases", ()):  # other names a call may use (load_skill is also "skill")
            self._aliases.setdefault(alias, item.name)
        return item

    def add_lazy_group(self, key: str, loader: Callable[[], list[AnyTool]], *, remote: bool = False) -> None:
        """Register tools loaded on first need; ``remote`` ones (a server to start) load only when listed."""
        self._pending[key] = loader
        if remote:
            self._remote.add(key)

    def load_all(self) -> None:
        while self._pending:
            self._load(next(iter(self._pending)))

    def load_local(self) -> builtins.list[AnyTool]:
        """Load every group but the remote ones; the tools known without starting anything."""
        for key in [k for k in self._pending if k not in self._remote]:
            self._load(key)
        return sorted(self._tools.values(), key=lambda t: (t.group, t.name))

    @property
    def has_remote_pending(self) -> bool:
        return any(key in self._remote for key in self._pending)

    def _load(self, key: str) -> None:
        if key == ENTRY_POINTS_KEY:  # built-ins first: a plugin never takes a built-in's name, whatever the order
            for builtin in [k for k in self._pending if k.startswith("builtin:")]:
                self._load(builtin)
        loader = self._pending.pop(key, None)
        if loader is not None:
            for item in loader():
                try:
                    self.add(item, origin=key)
                except DefinitionError as exc:
                    if key != ENTRY_POINTS_KEY:
                        raise
                    # One plugin's clash must not take the catalog down, nor replace the tool it clashes with.
                    log.error("toolrig: a tool plugin was skipped: %s", exc)

    # ------------------------------------------------------------------------------------ reading

    def get(self, name: str) -> AnyTool:
        found = self.find(name)
        if found is None:
            raise UnknownToolError(name, sorted(self._tools))
        return found

    def find(self, name: str) -> AnyTool | None:
        """The tool called ``name``, or displayed as ``name`` (``server/tool``); None when there is none.

        A built-in name loads only its own group (the index says which), not the whole catalog.
        """
        if name not in self._tools and name not in self._aliases and self._pending:
            group = _builtin_group_of(name)
            if group is not None and f"builtin:{group}" in self._pending:
                self._load(f"builtin:{group}")
            if name not in self._tools and name not in self._aliases:
                self.load_all()
        found = self._tools.get(name)
        if found is None and name in self._aliases:
            found = self._tools.get(self._aliases[name])
        return found

    def list(self, group: str | None = None) -> builtins.list[AnyTool]:
        if group is not None and f"builtin:{group}" in self._pending:
            # One built-in group: import its module and the plugins, not every other group.
            self._load(f"builtin:{group}")
            self._load("entry-points")
        else:
            self.load_all()
        tools = sorted(self._tools.values(), key=lambda t: (t.group, t.name))
        return [t for t in tools if group is None or t.group == group]

    def groups(self) -> builtins.list[str]:
        return sorted({t.group for t in self.list()})

    def names(self) -> builtins.list[str]:
        return [t.name for t in self.list()]

    def __iter__(self) -> Iterator[AnyTool]:
        return iter(self.list())

    def __len__(self) -> int:
        return len(self.list())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def select(self, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> Registry:
        """A registry of the tools ``allow`` admits (empty admits all) that ``deny`` does not name.

        Patterns are globs on the tool name or its display name (``files_*``, ``server/*``), or ``group:NAME``.
        Deny always wins.
        """
        allow, deny = list(allow), list(deny)
        chosen = Registry()
        for item in sorted(self._tools.values(), key=lambda t: (t.group, t.name)):
            if (not allow or matches_any(item, allow)) and not matches_any(item, deny):
                chosen.add(item, origin=self._origin[item.name])
        for key in self._pending:
            # Still lazy: each group is narrowed the same way when (if ever) it is loaded.
            chosen.add_lazy_group(key, self._narrowed_loader(key, allow, deny), remote=key in self._remote)
        return chosen

    def _narrowed_loader(
        self, key: str, allow: builtins.list[str], deny: builtins.list[str]
    ) -> Callable[[], builtins.list[AnyTool]]:
        def load() -> builtins.list[AnyTool]:
            self._load(key)
            return [
                item
                for name, item in self._tools.items()
                if self._origin[name] == key and (not allow or matches_any(item, allow)) and not matches_any(item, deny)
            ]

        return load


def matches_any(item: AnyTool, patterns: Iterable[str]) -> bool:
    """Whether a tool name glob (or ``group:NAME``) in config names this tool.

    A tool answers to its name, its display name and every name a built-in profile gives it, so
    ``tools.deny: [Bash]`` denies run_command whichever profile the model sees (docs/profiles.md).
    """
    aliases: tuple[str, ...] | None = None  # the profiles' face tables load only when a pattern needs them
    for pattern in patterns:
        if pattern.startswith("group:"):
            if fnmatch.fnmatchcase(item.group, pattern[len("group:") :]):
                return True
        elif fnmatch.fnmatchcase(item.name, pattern) or (
            item.display_name is not None and fnmatch.fnmatchcase(item.display_name, pattern)
        ):
            return True
        else:
            if aliases is None:
                aliases = aliases_of(item.name)
            if any(fnmatch.fnmatchcase(alias, pattern) for alias in aliases):
                return True
    return False


def builtin_index() -> dict[str, str]:
    """Each built-in tool name and alias with its group, as the catalog says (imports every built-in group)."""
    found: dict[str, str] = {}
    for item in Registry.default(entry_points=False).list():
        for name in (item.name, item.display_name, *getattr(item, "aliases", ())):
            if name:
                found[name] = item.group
    return dict(sorted(found.items()))


def write_builtin_index() -> None:
    """Rewrite ``toolrig/tools/_index.py`` from the catalog (run after adding or renaming a built-in tool)."""
    from pathlib import Path

    from toolrig.tools import _index

    path = Path(_index.__file__)
    head, _, rest = path.read_text().partition("GROUP_OF = {\n")
    _, _, tail = rest.partition("\n}\n")
    lines = "".join(f'    "{name}": "{group}",\n' for name, group in builtin_index().items())
    path.write_text(f"{head}GROUP_OF = {{\n{lines}}}\n{tail}")


def _builtin_group_of(name: str) -> str | None:
    from toolrig.tools._index import GROUP_OF

    return GROUP_OF.get(name)


def _builtin_loader(group: str) -> Callable[[], list[AnyTool]]:
    def load() -> list[AnyTool]:
        module = importlib.import_module(f"{BUILTIN_PACKAGE}.{group}")
        tools = _tools_from(module, f"built-in group {group!r}")
        for item in tools:
            if item.group != group:
                raise DefinitionError(f"tool {item.name!r} lives in tools/{group}.py but says group={item.group!r}")
        return tools

    return load


def _entry_point_loader() -> list[AnyTool]:
    from importlib.metadata import entry_points

    tools: list[AnyTool] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
        except Exception as exc:
            # One broken plugin must not take the catalog down with it; say so loudly instead.
            log.error("toolrig: could not load tool plugin %r (%s): %s", ep.name, ep.value, exc)
            continue
        tools.extend(_tools_from(loaded, f"entry point {ep.name!r} ({ep.value})"))
    return tools
