"""More ``toolrig`` subcommands, one module each (``mcp.py`` -> ``toolrig mcp``), found without a central list.

A module here exports ``command`` (a click command or group) and imports only click at module level:
``toolrig --help`` imports every module of this package.
"""

from __future__ import annotations

import pkgutil


def command_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
