"""toolrig's version, apart from the package's public API so that any module can name it without importing that."""

from __future__ import annotations

__version__ = "0.1.0"
