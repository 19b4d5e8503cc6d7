"""The built-in catalog: one group per module, each exporting ``TOOLS``. Groups never import each other."""

from __future__ import annotations

import pkgutil


def group_names() -> list[str]:
    """The built-in groups, read from this directory without importing any tool module."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
